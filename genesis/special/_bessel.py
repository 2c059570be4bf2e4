"""The Bessel functions of ``genesis.special``, with Cephes's approximations and branch points (the ones torch's
kernels use): J0, J1, Y0 and Y1 (rational functions up to 5, the Hankel asymptotic form above), the exponentially
scaled I0 and I1 (Chebyshev series on [0, 8] and in 32/x above), K0 and K1 and their scaled forms (Chebyshev series
on (0, 2] and in 8/x above), the spherical j0 and the Airy function Ai.

Each is a composite of tensor ops in the input's dtype, so it runs on every device. torch differentiates only ``i0e``
and ``i1e`` (with the formulas used here); the other Bessel functions are differentiable here too, through the
relations between them (J0' = -J1, K1' = -K0 - K1/x, ...), and ``spherical_bessel_j0`` through its composite.
``airy_ai``, like torch's, has no derivative: its result never requires grad.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Function, no_grad
from genesis.ops.math_special import I1
from genesis.special._common import _HALF, _chebyshev_series, _float_input, _polynomial
from genesis.tensor import Tensor

# J0 and Y0 (Cephes j0.c): P and Q of the asymptotic form in 25/x^2, shared by both; below 5, R for J0 (divided
# there by its first two zeros squared, DR1 and DR2) and YP/YQ for Y0.
_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01)
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02)
_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15)
_J0_RQ = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18)
_Y0_YP = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
          -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
          4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
          8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
          2.50596256172653059228e+17)
_J0_DR1, _J0_DR2 = 5.78318596294678452118e+00, 3.04712623436620863991e+01
# J1 and Y1 (Cephes j1.c): the same forms in (5/x)^2, with J1's zeros.
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00)
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01)
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15)
_J1_RQ = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18)
_Y1_YP = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
          -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
          1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
          6.87141087355300489866e+16, 3.97270608116560655612e+18)
_J1_DR1, _J1_DR2 = 1.46819706421238932572e+01, 4.92184563216946036703e+01
# exp(-|x|) I0 and exp(-|x|) I1 (Cephes i0.c, i1.c): Chebyshev series in x/2 - 2 on [0, 8] (I1's divided by x),
# in 32/x - 2 above (times sqrt(x)).
_I0E_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
          1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
          -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
          9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
          -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
          1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
          -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
          1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
          -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
          1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01)
_I0E_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
          3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
          1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
          -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
          7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
          -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
          3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
          2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
          8.04490411014108831608e-01)
_I1E_A = (2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
          -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
          3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
          -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
          9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07,
          -8.56872026469545474066e-07, 3.47025130813767847674e-06, -1.32731636560394358279e-05,
          4.78156510755005422638e-05, -1.61760815825896745588e-04, 5.12285956168575772895e-04,
          -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
          2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01,
          -1.76416518357834055153e-01, 2.52587186443633654823e-01)
_I1E_B = (7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
          -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
          -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
          4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
          -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
          3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
          -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
          -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
          7.78576235018280120474e-01)
# K0 and K1 (Cephes k0.c, k1.c): Chebyshev series in x^2 - 2 on (0, 2] (besides the log(x/2) I term), in 8/x - 2
# above (of exp(x) sqrt(x) K).
_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11, 1.90451637722020886025e-09,
         2.53479107902614945675e-07, 2.28621210311945178607e-05, 1.26461541144692592338e-03, 3.59799365153615016266e-02,
         3.44289899924628486886e-01, -5.35327393233902768720e-01)
_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
         2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
         -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
         2.44030308206595545468e+00)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
         -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
         -3.53155960776544875667e-01, 1.52530022733894777053e+00)
_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
         -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
         1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
         2.72062619048444266945e+00)
# Ai (Cephes airy.c, as torch has it): AN/AD in 1/zeta for x >= 2.09, AFN/AFD and AGN/AGD in 1/zeta^2 for
# x < -2.09, zeta = 2 |x|^(3/2) / 3.
_AIRY_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
            1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
            1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AIRY_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
            1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
            1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AIRY_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
             -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
             -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AIRY_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
             9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
             4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AIRY_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
             9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
             5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
             8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AIRY_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
             5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
             4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
             4.91834570062930015649e-09)


_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_INV_SQRT_PI = 5.64189583547756286948e-01  # 1 / sqrt(pi)


def _hankel_form(x: Tensor, w: Tensor, coefficients: tuple, phase: float, second_kind: bool) -> Tensor:
    """Cephes's asymptotic form above 5: ``sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase))`` for J,
    ``... (P sin(x - phase) + 5/x Q cos(x - phase))`` for Y, with ``P = PP(w) / PQ(w)``, ``Q = QP(w) / QQ(w)``."""
    pp, pq, qp, qq = coefficients
    p = _polynomial(w, pp) / _polynomial(w, pq)
    q = 5.0 / x * (_polynomial(w, qp) / _polynomial(w, qq))
    shifted = x - phase
    if second_kind:
        wave = p * F.sin(shifted) + q * F.cos(shifted)
    else:
        wave = p * F.cos(shifted) - q * F.sin(shifted)
    return wave * _SQRT_2_OVER_PI / F.sqrt(x)


def _j0(x: Tensor) -> Tensor:
    """J0 (even): ``1 - x^2 / 4`` below 1e-5, the rational form up to 5, the Hankel form above."""
    x = x.abs()
    z = x * x
    small = (z - _J0_DR1) * (z - _J0_DR2) * _polynomial(z, _J0_RP) / _polynomial(z, _J0_RQ)
    small = F.where(x < 1e-5, 1.0 - z / 4.0, small)
    large = _hankel_form(x, 25.0 / z, (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ), math.pi / 4, False)
    return F.where(x <= 5.0, small, large)


def _j1(x: Tensor) -> Tensor:
    """J1 (odd): the rational form up to 5, the Hankel form above."""
    z = x * x
    small = _polynomial(z, _J1_RP) / _polynomial(z, _J1_RQ) * x * (z - _J1_DR1) * (z - _J1_DR2)  # odd in x
    r = x.abs()
    w = 5.0 / r
    large = _hankel_form(r, w * w, (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ), 3 * math.pi / 4, False)
    return F.where(r <= 5.0, small, F.where(x < 0, -large, large))


def _y0(x: Tensor) -> Tensor:
    """Y0: ``R(x^2) + (2 / pi) log(x) J0(x)`` up to 5, the Hankel form above; -inf at 0, NaN below."""
    z = x * x
    small = _polynomial(z, _Y0_YP) / _polynomial(z, _Y0_YQ) + _TWO_OVER_PI * F.log(x) * _j0(x)
    large = _hankel_form(x, 25.0 / z, (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ), math.pi / 4, True)
    out = F.where(x <= 5.0, small, large)
    return F.where(x == 0, -math.inf, F.where(x < 0, math.nan, out))


def _y1(x: Tensor) -> Tensor:
    """Y1: ``x R(x^2) + (2 / pi) (J1(x) log(x) - 1 / x)`` up to 5, the Hankel form above; -inf at 0, NaN below."""
    z = x * x
    small = x * (_polynomial(z, _Y1_YP) / _polynomial(z, _Y1_YQ)) + _TWO_OVER_PI * (_j1(x) * F.log(x) - 1.0 / x)
    w = 5.0 / x
    large = _hankel_form(x, w * w, (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ), 3 * math.pi / 4, True)
    out = F.where(x <= 5.0, small, large)
    return F.where(x == 0, -math.inf, F.where(x < 0, math.nan, out))


def _i0e(x: Tensor) -> Tensor:
    """``exp(-|x|) I0(x)`` (even)."""
    x = x.abs()
    large = _chebyshev_series(32.0 / x - 2.0, _I0E_B) / F.sqrt(x)
    return F.where(x <= 8.0, _chebyshev_series(x / 2.0 - 2.0, _I0E_A), large)


def _i1e(x: Tensor) -> Tensor:
    """``exp(-|x|) I1(x)`` (odd)."""
    r = x.abs()
    small = _chebyshev_series(r / 2.0 - 2.0, _I1E_A) * r
    out = F.where(r <= 8.0, small, _chebyshev_series(32.0 / r - 2.0, _I1E_B) / F.sqrt(r))
    return F.where(x < 0, -out, out)


def _k(x: Tensor, order: int, scaled: bool) -> Tensor:
    """K0 or K1, times exp(x) if ``scaled``: +inf at 0, NaN for negative x."""
    series = _chebyshev_series(x * x - 2.0, _K1_A if order else _K0_A)
    if order:
        small = F.log(0.5 * x) * I1.apply(x) + series / x
    else:
        small = series - F.log(0.5 * x) * F.i0(x)
    large = _chebyshev_series(8.0 / x - 2.0, _K1_B if order else _K0_B)
    if scaled:
        small, large = small * F.exp(x), large / F.sqrt(x)
    else:
        large = F.exp(-x) * large / F.sqrt(x)
    out = F.where(x <= 2.0, small, large)
    return F.where(x == 0, math.inf, F.where(x < 0, math.nan, out))


class _Bessel(Function):
    """J0, J1, Y0 or Y1 (``second_kind``); for both kinds Z0' = -Z1 and Z1' = Z0 - Z1 / x (J1'(0) = 1/2)."""

    _FORWARD = {(0, False): _j0, (1, False): _j1, (0, True): _y0, (1, True): _y1}

    @staticmethod
    def forward(ctx, x: Tensor, order: int, second_kind: bool) -> Tensor:
        out = _Bessel._FORWARD[order, second_kind](x)
        ctx.save_for_backward(x, out)
        ctx.order, ctx.second_kind = order, second_kind
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        x, out = ctx.saved_tensors
        if not ctx.order:
            return -grad * _Bessel.apply(x, 1, ctx.second_kind), None, None
        if ctx.second_kind:
            return grad * (_Bessel.apply(x, 0, True) - out / x), None, None
        safe = F.where(x == 0, 1.0, x)
        return grad * F.where(x == 0, 0.5, _Bessel.apply(x, 0, False) - out / safe), None, None


class _SpecialI0E(Function):
    """``exp(-|x|) I0(x)``; torch's derivative ``i1e(x) - sgn(x) i0e(x)``. float16 and bfloat16 compute in float32."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        out = _i0e(x.to(dtypes.float32) if x.dtype in _HALF else x).to(x.dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        x, out = ctx.saved_tensors
        return grad * (i1e(x) - F.sign(x) * out)


class _SpecialI1E(Function):
    """``exp(-|x|) I1(x)``; torch's derivative ``i0e(x) - (sgn(x) + 1/x) i1e(x)``, 1/2 where ``|x| <= eps``, which
    torch has for float32 and float64 only."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        out = _i1e(x.to(dtypes.float32) if x.dtype in _HALF else x).to(x.dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        x, out = ctx.saved_tensors
        if x.dtype in _HALF:
            raise NotImplementedError(f"\"i1e_backward\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[x.dtype]}'")
        eps = dtypes.finfo(x.dtype).eps
        not_tiny = x.abs() > eps
        safe = F.where(not_tiny, x, eps)
        return grad * F.where(not_tiny, i0e(safe) - (F.sign(safe) + 1.0 / safe) * out, 0.5)


class _ModifiedBesselK(Function):
    """K0 or K1, scaled by exp(x) or not, with K0' = -K1, K1' = -K0 - K1 / x (and for the scaled forms, the same plus
    the function itself)."""

    @staticmethod
    def forward(ctx, x: Tensor, order: int, scaled: bool) -> Tensor:
        out = _k(x, order, scaled)
        ctx.save_for_backward(x, out)
        ctx.order, ctx.scaled = order, scaled
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        x, out = ctx.saved_tensors
        if ctx.order:
            derivative = -_ModifiedBesselK.apply(x, 0, ctx.scaled) - out / x
        else:
            derivative = -_ModifiedBesselK.apply(x, 1, ctx.scaled)
        if ctx.scaled:
            derivative = derivative + out
        return grad * derivative, None, None


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0; integers promote to the default float dtype."""
    return _Bessel.apply(_float_input("bessel_j0", input), 0, False)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1 (odd); integers promote to the default float dtype."""
    return _Bessel.apply(_float_input("bessel_j1", input), 1, False)


def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0: -inf at 0, NaN for negative input."""
    return _Bessel.apply(_float_input("bessel_y0", input), 0, True)


def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1: -inf at 0, NaN for negative input."""
    return _Bessel.apply(_float_input("bessel_y1", input), 1, True)


def i0e(input: Tensor) -> Tensor:
    """The exponentially scaled modified Bessel function of the first kind of order 0, ``exp(-|x|) I0(x)``: finite
    where I0 overflows. float16 and bfloat16 are computed in float32, as torch's."""
    return _SpecialI0E.apply(_float_input("i0e", input, half=True))


def i1e(input: Tensor) -> Tensor:
    """The exponentially scaled modified Bessel function of the first kind of order 1, ``exp(-|x|) I1(x)``."""
    return _SpecialI1E.apply(_float_input("i1e", input, half=True))


def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0: +inf at 0, NaN for negative input."""
    return _ModifiedBesselK.apply(_float_input("modified_bessel_k0", input), 0, False)


def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1: +inf at 0, NaN for negative input."""
    return _ModifiedBesselK.apply(_float_input("modified_bessel_k1", input), 1, False)


def scaled_modified_bessel_k0(input: Tensor) -> Tensor:
    """``exp(x) K0(x)``, finite where K0 underflows."""
    return _ModifiedBesselK.apply(_float_input("scaled_modified_bessel_k0", input), 0, True)


def scaled_modified_bessel_k1(input: Tensor) -> Tensor:
    """``exp(x) K1(x)``, finite where K1 underflows."""
    return _ModifiedBesselK.apply(_float_input("scaled_modified_bessel_k1", input), 1, True)


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x``: its Taylor polynomial of degree
    12 where ``|x| < 0.5`` (as torch), 0 at +-inf. A composite, so differentiable."""
    x = _float_input("spherical_bessel_j0", input)
    near_zero, infinite = x.abs() < 0.5, F.isinf(x)
    # Each branch sees only the inputs it serves, so the unused one passes a zero gradient, never NaN.
    z = F.where(near_zero, x, 0.0)
    z = z * z
    series = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0 + z * (
        -1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))))
    r = F.where(near_zero | infinite, 1.0, x)
    out = F.where(near_zero, series, F.sin(r) / r)
    return F.where(infinite, 0.0, out)


def _airy_ai(x: Tensor) -> Tensor:
    """Ai by Cephes's three regions: below -2.09, between, from 2.09 (0 above 103.892, NaN at +-inf)."""
    # x < -2.09: the oscillating asymptotic form in z = 1 / zeta
    zeta = -2.0 * x * F.sqrt(-x) / 3.0
    z = 1.0 / zeta
    zz = z * z
    f = 1.0 + zz * _polynomial(zz, _AIRY_AFN) / _polynomial(zz, _AIRY_AFD)
    g = z * _polynomial(zz, _AIRY_AGN) / _polynomial(zz, _AIRY_AGD)
    theta = zeta + 0.25 * math.pi
    oscillating = _INV_SQRT_PI / F.sqrt(F.sqrt(-x)) * (F.sin(theta) * f - F.cos(theta) * g)
    # x >= 2.09: the decaying asymptotic form in 1 / zeta
    zeta = 2.0 * x * F.sqrt(x) / 3.0
    ratio = _polynomial(1.0 / zeta, _AIRY_AN) / _polynomial(1.0 / zeta, _AIRY_AD)
    decaying = _INV_SQRT_PI * ratio / (2.0 * F.sqrt(F.sqrt(x)) * F.exp(zeta))
    # |x| < 2.09: the Maclaurin series Ai = c1 f - c2 g, f and g power series in x^3. Cephes adds terms until the
    # next one of f is below machine epsilon; 13 terms reach that everywhere on the interval, and the terms past it
    # change only the last bit.
    cube = x * x * x
    f, g, m, n = F.ones_like(x), x, F.ones_like(x), x
    k = 1.0
    for _ in range(13):
        m, n = m * cube / (k + 1.0) / (k + 2.0), n * cube / (k + 2.0) / (k + 3.0)
        f, g = f + m, g + n
        k += 3.0
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    out = F.where(x < -2.09, oscillating, F.where(x >= 2.09, decaying, series))
    return F.where(F.isinf(x), math.nan, F.where(x > 103.892, 0.0, out))


def airy_ai(input: Tensor) -> Tensor:
    """The Airy function Ai: NaN at +-inf, 0 above 103.892 (where it underflows). Not differentiable, as torch's."""
    x = _float_input("airy_ai", input)
    with no_grad():
        return _airy_ai(x)
