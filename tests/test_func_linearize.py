"""``genesis.func.linearize`` against ``torch.func.linearize``: output, Jacobian-vector products for several tangents,
pytrees, a captured parameter and torch's errors."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch

import genesis
from tests.test_autograd_api_gaps import _numpy, _tensor

LIBS = (genesis, torch)


def _linearize(lib: Any, func: Any, *primals: Any) -> tuple:
    with warnings.catch_warnings():  # torch's fx constant folding warns about its own graph
        warnings.simplefilter("ignore")
        return lib.func.linearize(func, *primals)


def test_linearize_matches_torch_for_several_tangents() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    tangents = [(rng.standard_normal((3, 4)), rng.standard_normal((3, 4))) for _ in range(3)]
    results = []
    for lib in LIBS:
        def f(a: Any, b: Any) -> dict:
            return {"rows": (a.sin() * b).sum(0), "gram": (a @ b.T).tanh(), "const": b.new_ones(2) * 1.0}

        out, jvp_fn = _linearize(lib, f, _tensor(lib, x), _tensor(lib, y))
        products = [jvp_fn(_tensor(lib, tx), _tensor(lib, ty)) for tx, ty in tangents]
        results.append(({k: _numpy(v) for k, v in out.items()},
                        [{k: _numpy(v) for k, v in p.items()} for p in products], out["rows"].requires_grad))
    (g_out, g_products, g_attached), (t_out, t_products, t_attached) = results
    assert g_attached == t_attached is False
    for key in t_out:
        np.testing.assert_allclose(g_out[key], t_out[key], rtol=1e-10)
    for gp, tp in zip(g_products, t_products):
        assert gp.keys() == tp.keys()
        for key in tp:
            np.testing.assert_allclose(gp[key], tp[key], rtol=1e-9, atol=1e-12)


def test_linearize_output_keeps_the_callers_graph() -> None:
    """As ``func(*primals)``: an output reaching a parameter that requires grad stays attached to it."""
    results = []
    for lib in LIBS:
        w = _tensor(lib, np.array([1.0, -2.0, 0.5]), requires_grad=True)
        out, jvp_fn = _linearize(lib, lambda x, w=w: (x * w).exp(), _tensor(lib, np.array([0.1, 0.2, 0.3])))
        out.sum().backward()
        results.append((_numpy(w.grad), _numpy(jvp_fn(_tensor(lib, np.ones(3))))))
    for g, t in zip(*results):
        np.testing.assert_allclose(g, t, rtol=1e-10)


def test_linearize_errors_as_torch() -> None:
    for lib in LIBS:
        x = _tensor(lib, np.ones(3))
        _, jvp_fn = _linearize(lib, lambda a, b: a * b, x, x)
        with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
            jvp_fn(x)
        with pytest.raises(RuntimeError, match="tangent:1 with shape"):
            jvp_fn(x, _tensor(lib, np.ones(2)))
        with pytest.raises(RuntimeError, match="tangent:0 with dtype"):
            jvp_fn(_tensor(lib, np.ones(3, dtype=np.float32)), x)
