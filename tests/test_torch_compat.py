"""``python -m genesis.torch_compat``: PyTorch scripts (tests/compat_scripts) run unchanged on Genesis with the
losses they have under PyTorch; torch imports resolve to Genesis only in the script's own code; missing names are
reported with the script's file and line."""

from __future__ import annotations

import json
import math
import operator
import os
import subprocess
import sys
import textwrap

import pytest
from torch.torch_version import TorchVersion as TorchsVersion

import genesis
from genesis import torch_compat
from tests.helpers import DEVICE, requires_torch_lanczos

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat_scripts")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_TORCH_RUNNER = """
import json, runpy, sys
import torch
torch.set_num_threads(int(sys.argv.pop(1)))  # the test process's count: the same reduction order in CPU kernels
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, __import__("os").path.dirname(script))
print(json.dumps(runpy.run_path(script, run_name="__main__")["losses"]))
"""


def _run_torch(script: str, args: list[str], threads: int | None = None) -> list[float]:
    """The script's losses under real PyTorch, in a fresh interpreter: state that other tests leave in this
    process's torch (such as the factory functions torch's device context recognizes) cannot change the oracle. It
    computes with this process's number of threads (``threads`` to choose another), so that CPU kernels reduce in
    the same order as under Genesis here."""
    import torch

    count = threads or torch.get_num_threads()
    out = subprocess.run([sys.executable, "-c", _TORCH_RUNNER, str(count), script, *args],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _compare(name: str, args: list[str], rtol: float = 1e-5, threads: int | None = None) -> list[float]:
    script = os.path.join(SCRIPTS, name)
    expected = _run_torch(script, args, threads)
    got = torch_compat.run(script, args)["losses"]
    assert len(got) == len(expected) > 0
    assert got == pytest.approx(expected, rel=rtol, abs=1e-7)
    return got


def test_mnist_cnn_with_adadelta_and_steplr() -> None:
    # On a GPU the script picks it (torch stays on its CPU): cuDNN's convolutions round differently.
    losses = _compare("mnist_adadelta.py", ["--epochs", "2", "--dropout", "0.0"],
                      rtol=2e-5 if DEVICE == "cpu" else 1e-3)
    assert losses[-1] < losses[0]


def test_accelerator_device_pick_and_legacy_idioms() -> None:
    _compare("accelerator_pick.py", ["15"])


def test_lbfgs_curve_fit() -> None:
    _compare("lbfgs_fit.py", [], rtol=1e-8)
    assert genesis.get_default_dtype() is genesis.float32


def test_policy_gradient_with_categorical() -> None:
    _compare("policy_gradient.py", [])


def test_sparse_gcn_layer() -> None:
    # Sparse COO tensors are CPU-only; the script makes its tensors on the default device, the CPU in a GPU run too.
    losses = _compare("sparse_gcn.py", [])
    assert losses[8] < losses[3]


def test_rotary_embedding_with_complex_numbers() -> None:
    _compare("rotary_complex.py", [])


def test_fourier_layer_with_stft_loss() -> None:
    # The script's own `import torch.fft` resolves to genesis.fft, a transform of the oracle's own result too.
    losses = _compare("spectral_fit.py", [])
    assert losses[3] < losses[0]



def test_beam_search_with_topk_views() -> None:
    # topk's results are fresh tensors the search view()s, as torch's.
    _compare("beam_search.py", [])


def test_long_fft_convolution_with_complex_parameters() -> None:
    # A complex nn.Parameter's gradient path conjugates as a plain tensor's; the loss falls.
    losses = _compare("long_fft_conv.py", [], rtol=1e-4 if DEVICE != "cpu" else 1e-5)
    assert losses[5] < losses[0]


def test_conv_norm_pooling_and_losses_in_float64() -> None:
    _compare("conv_norm_loss_zoo.py", [], rtol=1e-8)
    assert genesis.get_default_dtype() is genesis.float32

def test_linalg_toolkit_with_full_svd_and_gradients() -> None:
    # Singular and eigenvectors enter only through sign-free quantities (abs, reconstructions, projections).
    _compare("linalg_toolkit.py", [], rtol=1e-6)


def test_inplace_semantics_and_out_arguments() -> None:
    _compare("inplace_out_semantics.py", [])


def test_llama_block_with_rotary_gqa_and_swiglu() -> None:
    # Its unguarded torch.cuda housekeeping (peak memory, empty_cache) runs on a machine without CUDA too.
    losses = _compare("llama_gqa_block.py", [])
    assert losses[-1] < losses[0]


def test_lora_adapters_by_parametrization_and_wrapping() -> None:
    _compare("lora_adapters.py", [])


def test_detection_box_ops_focal_loss_and_roi_align() -> None:
    # IoU/GIoU by broadcasting, an argsort NMS loop, meshgrid anchors, focal and smooth L1 losses, RoI align
    # through affine_grid/grid_sample, grid_sample's modes.
    _compare("detection_box_ops.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)


def test_torchvision_detection_internals_with_export_guards_and_half_iou() -> None:
    # FrozenBatchNorm2d drops num_batches_tracked while loading; torch.onnx.is_in_onnx_export() is False; the
    # float16 and bfloat16 IoU gradients stay finite where the squared union overflows (division's gradient staged as
    # torch's); bfloat16 autocast keeps parameter gradients float32.
    losses = _compare("detection_torchvision_internals.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-3)
    assert losses[:2] == [0, 0] and losses[3] is True and losses[25] is False
    assert losses[27] is losses[54] is True and all(v < 0 for v in losses[80:83])


def test_instance_masks_with_0d_where_index_dtypes_and_integer_refusals() -> None:
    # where(cond) and nonzero(as_tuple=True) read a 0-d tensor as one element; masked_scatter into a 0-d tensor;
    # int32 index tensors work and int16 ones raise; adaptive pooling and grid_sample refuse integer masks.
    losses = _compare("instance_mask_edge_cases.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[32:40] == [1, True, 0, True, 1, 0, 0.75, 0.0] and losses[53:62] == [True] * 9


@requires_torch_lanczos
def test_spatial_transformer_lanczos_resize_and_channels_last_decoder() -> None:
    # One affine_grid differentiated by two autograd.grad calls, antialiased Lanczos (float and uint8), resize
    # argument errors, channels_last kept through flips, constant pads and unpooling, empty adaptive pools.
    _compare("stn_resample_layouts.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)


def test_ppo_with_gae_categorical_and_independent_normal() -> None:
    _compare("ppo_gae.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)


def test_neural_tangent_kernel_and_forward_mode_ad() -> None:
    # A custom Function's jvp deletes what its forward kept on ctx.
    _compare("ntk_forward_ad.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)


def test_func_transforms_over_custom_functions_calling_numpy() -> None:
    # forward runs without grad mode, so numpy() of an input that requires grad is allowed there, as in torch.
    _compare("func_custom_functions.py", [])


def test_autograd_research_toolbox() -> None:
    # A module backward hook gives zeros for a tensor input needing no gradient; vmap refuses random draws by
    # default; an inference tensor refuses in-place updates outside inference_mode.
    losses = _compare("autograd_research_toolbox.py", [])
    assert losses[15:17] == [3.0, 0.0] and losses[22:24] == [1.0, 1.0] and losses[25:29] == [1.0] * 4


def test_vit_in_timm_idioms_with_torch_assert() -> None:
    losses = _compare("vit_timm_layers.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[4] < losses[2]


def test_mamba_selective_scan_sequential_and_parallel() -> None:
    losses = _compare("selective_scan.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert all(losses[i] for i in (0, 3, 6, 9))


def test_ddpm_training_ddim_guided_sampling_and_a_vq_codebook() -> None:
    losses = _compare("diffusion_vq_sampling.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    # Training lowers the noise-prediction loss; the seeded timesteps are int64 and in range; the codes all land.
    assert losses[4] < losses[2] and losses[5:7] == [1.0, 1.0] and sum(losses[18:24]) == 128


def test_user_optimizer_with_hooks_loss_scaling_and_a_confusion_matrix() -> None:
    losses = _compare("custom_optimizer_hooks.py", [])
    # The hooks saw the state before and after each step; the user's count reached 5; bincount agrees with the matrix.
    assert losses[8:16] == [0.0, -4.0, 4.0, -4.0, 4.0, -4.0, 4.0, -4.0] and losses[17] == 5.0 and losses[-1] == 1.0


def test_checkpoint_resume_reproduces_the_uninterrupted_run() -> None:
    losses = _compare("checkpoint_resume.py", [])
    assert losses[:3] == [1.0, 1.0, 1.0] and losses[16] == 1.0


def test_batched_data_pipeline_with_a_custom_collate_map() -> None:
    # Datasets read through __getitems__ (Subset and StackDataset pass index batches on), collate with a user's
    # type map, the loader's iterator object, and a Subset subclass refused without __getitems__.
    losses = _compare("batched_data_pipeline.py", [])
    assert losses[15] < losses[13] and losses[26:28] == [4, 5]
    assert all(losses[i] is True for i in (0, 6, 8, 9, 12, 16, 17, 18, 19, 21, 23, 25))


def test_trainer_checkpoint_with_safe_globals_and_a_plateau_schedule() -> None:
    # An argparse.Namespace in a weights-only checkpoint through safe_globals, state-dict versions after a round
    # trip, plain SGD keeping no state, ReduceLROnPlateau over a group added mid-run, a no_grad generator.
    losses = _compare("trainer_checkpoint_safe_globals.py", [])
    assert losses[13] < losses[0] and losses[9] == losses[14] == 5 and losses[16] == losses[17] == 0.025
    assert losses[18:23] == [False, True, True, True, True] and losses[24] == 2 and losses[26:29] == [True] * 3


def test_hf_llama_on_a_padded_batch_with_sdpa_and_autocast() -> None:
    # Padded queries attend no key: their gradients are those of torch's CPU flash kernel; under bfloat16 autocast
    # the float32 mask is cast with q, k and v.
    losses = _compare("hf_llama_padded_sdpa.py", [])
    assert losses[20] < losses[11]


def test_model_loading_idioms_patching_torch_modules() -> None:
    # HF's no_init_weights replaces torch.nn.init's functions, accelerate's init_empty_weights
    # nn.Module.register_parameter; meta-device construction, assign=True loads, state-dict hooks.
    _compare("model_loading_idioms.py", [])


def test_module_hooks_spectral_norm_versions_and_whole_model_checkpoints() -> None:
    # Full backward hooks on a tuple with a number and a named tuple (one grad_output entry per item), none on a
    # dict; a spectral-norm state dict of the layout before version 1 loads; a longer vector fills the parameters;
    # a whole model keeps its shared block and its hook function through torch.save / torch.load.
    losses = _compare("module_hooks_checkpoints.py", [])
    assert losses[:3] == [0, False, 2] and losses[16] == 1 and losses[30] is True and losses[32] is True


def test_checkpoint_views_and_dlpack_capsules() -> None:
    # Split views of a fused weight share its memory after torch.load; namedtuples, dataclasses, bytes, complex,
    # Size and sets round trip; a weights-only load refuses classes with UnpicklingError; DLPack shares memory.
    losses = _compare("checkpoint_views_dlpack.py", [])
    assert losses[:4] == [80.0, 90.0, 100.0, 110.0] and losses[16:19] == [0, 8, 16]


def test_legacy_optimizers_with_scale_first_overloads_and_numpy_scalars() -> None:
    # exp_avg.mul_(b1).add_(1 - b1, grad), addcdiv_(-step, m, d); loss.data[0] on a 0-dim loss names tensor.item();
    # a replay buffer's np.float32 rewards and done flags on the left of tensor arithmetic and as clamp bounds.
    losses = _compare("legacy_optimizer_overloads.py", [])
    assert losses[0] is True and losses[19] < losses[1]  # the 0-dim index error, then a falling Adam loss


def test_masked_policies_bernoulli_and_constraint_checks() -> None:
    # Bernoulli log-probabilities of certain outcomes are exact zeros as torch's; a covariance symmetric up to
    # rounding passes validation; the private _InverseTransform class.
    _compare("masked_policy_distributions.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)


def test_keyword_spotting_with_phase_features_and_distillation() -> None:
    # atan2's gradient is zero on the exactly silent STFT bins of zero-padded clips (no NaN reaches the waveform);
    # hardtanh, relu6, hardsigmoid and hardswish pass no gradient at their bounds.
    losses = _compare("kws_phase_distillation.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[14] is True


def test_tabular_binning_target_encoding_and_calibration() -> None:
    # Float values binned by integer boundaries compare in the promoted dtype; searchsorted, bucketize,
    # gaussian_nll_loss and quantile refuse bad arguments with torch's messages; gaussian_nll_loss takes a float var.
    losses = _compare("tabular_binning_calibration.py", [])
    assert losses[22:24] == [True, True] and losses[50] is True and losses[56:58] == [True, True]


def test_convs2s_encoder_recurrent_cells_and_packed_sequences_by_hand() -> None:
    # torch.conv_tbc and the top-level cell functions; a PackedSequence built from data, batch sizes and
    # sorted_indices gets its unsorted_indices; an LSTM subclass's check_forward_args is what forward calls.
    losses = _compare("convs2s_recurrent_cells.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[4] < losses[1] and losses[17:20] == [0, 2, 4] and losses[34:37] == [2, 0, 1]
    assert all(losses[i] is True for i in (0, 20, 28, 32, 33, 41, 46, 48, 53, 54))  # messages, hooks, dtypes


def test_simclr_with_hand_written_lars_and_lamb_and_their_checkpoint() -> None:
    # A 0-d trust ratio is the number alpha; a user optimizer's 0-d state loads from a checkpoint unchecked; a
    # parameter listed twice warns and is stepped once per appearance, indexed by its last position.
    losses = _compare("ssl_lars_lamb_checkpoint.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[8] < losses[0] and losses[16] == losses[19] == 3 and losses[18] is True
    assert losses[26:32] == [0.25, 0.25, 0.25, True, True, True] and losses[35:38] == [10, 11, 6.0]


def test_metric_learning_and_relational_distillation_losses() -> None:
    # CosineEmbeddingLoss ignores label 0; 'elementwise_mean' is 'mean' with torch's warning; the legacy flags and
    # 'mean' KL divergence warn; mixed dtypes and wrong weight sizes are refused in torch's words.
    losses = _compare("metric_distillation_losses.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[20:22] == [True, True] and losses[22:25] == [0.0, 0.0, 4] and losses[27] is losses[28] is True
    assert all(v is True for v in losses[31:41])


def test_word_vectors_with_sparse_gradients_and_optimizer_refusals() -> None:
    # Adagrad, SGD with momentum, LBFGS and SparseAdam on sparse embedding gradients; the optimizers that refuse one
    # say so in torch's words and change nothing; max_norm renormalizes as torch rounds it.
    losses = _compare("word_vectors_sparse.py", [])
    assert losses[4] < losses[1] and losses[12] < losses[11]
    assert losses[13:27:2] == [True] * 7 and losses[14:27:2] == [losses[14]] * 7


def test_sparse_embedding_gradients_handled_by_hand_and_by_grad_scaler() -> None:
    # p.grad.data of a sparse gradient, its in-place mul_/div_/+= and norm, strided tensors adding one (add, sub_,
    # -=), and GradScaler unscaling sparse gradients whose values came from a broadcast gradient.
    losses = _compare("sparse_embedding_hand_loops.py", [])
    assert losses[15] < losses[0] and all(losses[i] is True for i in (1, 3, 24, 48)) and losses[25] is False


def test_recommender_with_tied_tables_and_sparse_slices() -> None:
    # Sizes from a numpy config in EmbeddingBag's repr; a max_norm table renormalized after a projection that only
    # needs its gradient; BCEWithLogitsLoss in the labels' dtype; bad offsets refused; a sparse click matrix indexed
    # per user, selected, narrowed, permuted and unsqueezed with torch's coalesced marks.
    # torch checks that embedding_bag's offsets increase only when it runs on several threads: its oracle does.
    losses = _compare("recsys_tied_tables_sparse_slices.py", [], threads=2)
    assert losses[0:2] == [True, True] and losses[8] < losses[2]
    assert losses[3:10:2] == [True] * 4 and losses[11] is True and losses[20:22] == [True, True]
    assert losses[40] == 2.0 and losses[47:51] == [5, True, 6, 5] and losses[51] is False


def test_pygcn_with_legacy_sparse_constructors_and_segment_pooling() -> None:
    # torch.sparse.FloatTensor and its type() name, a sparse tensor through torch.save / torch.load, CSR through
    # torch.mm, sparse @ 1-D vectors, sparse.spdiags, the size-only sparse_coo_tensor and torch.segment_reduce.
    losses = _compare("pygcn_legacy_sparse.py", [])
    assert losses[1] is losses[2] is True and losses[3] == 196
    assert losses[29:33] == [False, True, True, True]


def test_gat_with_scatter_softmax_and_pooling() -> None:
    # scatter_reduce amax / amin over many edges per node, with ties; a bool flag stays bool through it.
    losses = _compare("gat_scatter_softmax.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[6] < losses[1] and losses[7] is losses[9] is losses[12] is True


def test_gan_lazy_r1_over_piecewise_linear_activations() -> None:
    # Each R1 backward hands every bias under an activation a zero gradient (AdamW steps it), the last layer's bias
    # none; the activations' and the rounding ops' node names are torch's; smooth L1 and Huber keep their
    # curvature where the difference is zero.
    losses = _compare("gan_lazy_r1_activations.py", [])
    starts = (0, 25, 50, 76, 102, 128, 154)
    assert all(losses[s + 8 * k:s + 8 * k + 6] == [False] * 5 + [True] for s in starts for k in range(3))
    assert all(losses[i] is True for i in (75, 101, 127, 153, 179, 180, 190, 200, 210, 220))
    assert losses[234:238] == [2.0] * 4 and losses[238:242] == [1.0, 1.0, 0.0, 0.0]


def test_sensor_cleaning_numerics_and_a_half_precision_scorer() -> None:
    # A NaN calibration bound clamps its channel to NaN; fmod keeps the fraction of large timestamps; isclose
    # applies its tolerances to integer ids; masked_fill refuses a fill value beyond float16 (nan_to_num makes it
    # inf); the variance of complex bins is real; integer alpha/value rules; the 0.5-norm passes no gradient to
    # zeros; the float16 / bfloat16 head rounds as torch's kernels (huber, smooth_l1, mish, logcumsumexp, renorm).
    losses = _compare("sensor_numerics_half_scorer.py", [])
    assert losses[82:85] == [True, True, True] and losses[193] is losses[195] is True
    assert losses[210:213] == [True, True, False]


def test_ctc_recognizer_skips_impossible_alignments_by_their_nan_gradients() -> None:
    # An utterance too short for its transcript: an infinite loss whose log_probs gradient is NaN over its valid
    # frames (the step is skipped) until zero_infinity; ctc_loss's argument errors are torch's messages.
    losses = _compare("ctc_asr_impossible_alignments.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[0:6:2] == [False] * 3 and losses[6:12:2] == [True] * 3 and losses[11] < losses[7]
    assert losses[12:15] == [True] * 3 and losses[26:31] == [True] * 5


def test_seq2seq_with_a_gradient_penalty_through_recurrent_layers_and_jit_idioms() -> None:
    # Double backward through GRU layers (padded and packed); the encoder's nested-tensor zeros follow
    # use_nested_tensor and torch.backends.mha; jit.isinstance and ScriptModule run eagerly; mixed-dtype blends, a
    # lone LSTMCell state and an ignore_index with probability targets are refused in torch's words.
    losses = _compare("seq2seq_gradient_penalty_jit.py", [], rtol=1e-5 if DEVICE == "cpu" else 1e-4)
    assert losses[0] is losses[1] is True and losses[8] < losses[2] and losses[11] > 0
    assert losses[13] == 0.0 and losses[14] == losses[16] > 0 and losses[15] is False
    assert losses[18:22] == [True, False, True, 3] and losses[22] is True and losses[24:28] == [True] * 4


def test_gan_under_bfloat16_autocast_with_one_grad_scaler_and_its_refusals() -> None:
    # An injected inf skips the discriminator's step and backs the scale off; the scale is a 0-d float32 tensor;
    # the refusals before scale(), for an optimizer without gradients and when pickled mid-iteration are torch's
    # AssertionErrors; the autocast switches and the deprecated spellings' FutureWarnings are torch's.
    losses = _compare("amp_scaler_gan_contract.py", [])
    assert losses[22] == -1.0 and losses[25] < losses[18] and all(v is True for v in losses[48:53] + losses[54:66])
    if DEVICE == "cpu":  # on a GPU machine CUDA's scaler is enabled and the program's tensors live on the GPU
        assert losses[67:76] == [True, True, False, True, True, True, False, True, True] and losses[79] is True


def test_activation_checkpoint_variants_and_the_non_reentrant_graph() -> None:
    # Both variants give the plain model's gradients; the non-reentrant one serves autograd.grad, backward(inputs=)
    # and double backward, recomputes once per pass and checks the saved tensors' metadata; the reentrant one
    # refuses .grad() and inputs= in torch's words.
    losses = _compare("activation_checkpoint_variants.py", [], rtol=1e-10 if DEVICE == "cpu" else 1e-4)
    assert losses[9] is losses[10] is True and losses[11] is False and losses[13] is True
    assert losses[18] is losses[20] is True and losses[31:34] == [3, True, True]
    assert all(v is True for v in losses[21:25] + [losses[27], losses[30]] + losses[41:49])


def test_torch_fft_module_resolves_to_genesis_fft(tmp_path) -> None:
    script = tmp_path / "uses_fft.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.fft
        from torch.fft import rfft
        x = torch.arange(8, dtype=torch.float32)
        FFT = torch.fft
        SPECTRUM = torch.fft.rfft(x)
        SAME = rfft is torch.fft.rfft
    """))
    env = torch_compat.run(str(script))
    assert env["FFT"].__name__ == "torch.fft" and env["SAME"]
    assert isinstance(env["SPECTRUM"], genesis.Tensor) and env["SPECTRUM"].dtype is genesis.complex64
    assert env["SPECTRUM"].shape == (5,) and abs(env["SPECTRUM"][0].item() - 28) < 1e-5


def test_imports_resolve_to_genesis_only_in_the_script(tmp_path) -> None:
    (tmp_path / "helper.py").write_text(textwrap.dedent("""
        import torch.nn.functional as F
        from torch import nn
        LINEAR = nn.Linear
        RELU = F.relu
    """))
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent("""
        import sys
        import json
        import torch
        import torch.utils.data
        from torch.utils.data import DataLoader
        import helper
        ARGV = list(sys.argv)
        NAME = __name__
        TENSOR = torch.Tensor
        DATA = torch.utils.data
        LOADER = DataLoader
        HELPER = helper
    """))
    env = torch_compat.run(str(script), ["--flag", "x"])
    assert env["ARGV"] == [str(script), "--flag", "x"] and env["NAME"] == "__main__"
    assert env["TENSOR"] is genesis.Tensor and env["LOADER"] is genesis.utils.data.DataLoader
    assert env["DATA"].__name__ == "torch.utils.data"
    assert env["HELPER"].LINEAR is genesis.nn.Linear and env["HELPER"].RELU is genesis.nn.functional.relu
    # Nothing leaks: the real torch is still what everyone else imports; the script's modules are gone.
    import torch

    assert sys.modules["torch"] is torch and torch.Tensor is not genesis.Tensor
    assert "helper" not in sys.modules and sys.argv[0] != str(script)


def test_config_driven_imports_resolve_to_genesis(tmp_path) -> None:
    # Hydra-style code picks classes by name with importlib; inside torch and Genesis importlib stays Python's.
    script = tmp_path / "configured.py"
    script.write_text(textwrap.dedent("""
        import importlib
        from importlib import import_module
        module_name, cls_name = "torch.optim.SGD".rsplit(".", 1)
        OPT = getattr(importlib.import_module(module_name), cls_name)
        NN = import_module("torch.nn")
        JSON = importlib.import_module("json")
    """))
    env = torch_compat.run(str(script))
    assert env["OPT"] is genesis.optim.SGD and env["NN"].Linear is genesis.nn.Linear and env["JSON"].__name__ == "json"
    import importlib

    assert importlib.import_module("torch.nn").__name__ == "torch.nn" and not hasattr(importlib.import_module(
        "torch.nn"), "_target")  # restored after the script


def test_monkeypatches_of_torch_modules_reach_genesis(tmp_path) -> None:
    # HF's no_init_weights replaces torch.nn.init's functions while a model is built: nn.Linear's initialization
    # calls the replacement, and the restored function is Genesis's again.
    script = tmp_path / "patches.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        original = torch.nn.init.kaiming_uniform_
        CALLS = []
        torch.nn.init.kaiming_uniform_ = lambda tensor, a=0, **kw: CALLS.append(a)
        nn.Linear(3, 2)
        torch.nn.init.kaiming_uniform_ = original
        nn.Linear(3, 2)
        torch.nn.functional.extra_name = 1
        del torch.nn.functional.extra_name
    """))
    env = torch_compat.run(str(script))
    assert env["CALLS"] == [math.sqrt(5)]
    assert genesis.nn.init.kaiming_uniform_ is env["original"] and not hasattr(genesis.nn.functional, "extra_name")


def test_a_script_beside_the_genesis_package(tmp_path) -> None:
    # A script at the root of a Genesis checkout (or anywhere genesis/ sits in its folder): Genesis's own modules
    # still import the real torch.
    import shutil

    shutil.copytree(os.path.join(ROOT, "genesis"), tmp_path / "genesis", ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint(torch.ones(2).sum().item())\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "genesis.torch_compat", str(script)], env=env, capture_output=True,
                         text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "2.0"


def test_missing_names_say_what_and_where(tmp_path) -> None:
    script = tmp_path / "uses_missing.py"
    script.write_text("import torch\n\nx = torch.ones(2)\ny = torch.definitely_not_there(x)\n")
    with pytest.raises(AttributeError) as err:
        torch_compat.run(str(script))
    message = str(err.value)
    assert "'torch.definitely_not_there'" in message and "'genesis'" in message and f"{script}:4" in message
    script.write_text("import torch.nn.functional as F\n\nF.not_a_function\n")
    with pytest.raises(AttributeError, match=r"'torch\.nn\.functional\.not_a_function'.*'genesis\.nn\.functional'"
                       rf".*{script.name}:3"):
        torch_compat.run(str(script))
    script.write_text("import os\nimport torch.fx\n")
    with pytest.raises(ModuleNotFoundError, match=rf"module 'torch\.fx' is not available.*{script.name}:2"):
        torch_compat.run(str(script))
    script.write_text("from torch.nn import NoSuchLayer\n")
    with pytest.raises(AttributeError, match=rf"'torch\.nn\.NoSuchLayer'.*{script.name}:1"):
        torch_compat.run(str(script))


def test_command_line(tmp_path) -> None:
    script = tmp_path / "cli.py"
    script.write_text("import sys, torch\nprint(type(torch.zeros(1)).__module__, sys.argv[1:], __name__)\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "genesis.torch_compat", str(script), "a", "--b"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "genesis.tensor ['a', '--b'] __main__"
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert 'genesis-torch = "genesis.torch_compat:main"' in f.read().split("[project.scripts]")[1]
    missing = subprocess.run([sys.executable, "-m", "genesis.torch_compat", str(tmp_path / "nope.py")], env=env,
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "no such script" in missing.stderr


def test_torch_version_reads_as_the_torch_release_genesis_follows(tmp_path) -> None:
    """A script's ``torch.__version__`` is the torch release whose API Genesis follows, with Genesis's version as
    the local label, and compares with strings and tuples as torch's own ``TorchVersion`` does."""
    script = tmp_path / "version_check.py"
    script.write_text('import torch\nv = torch.__version__\n'
                      'losses = [v, v >= "2.0", v >= (2, 0), torch.version.__version__ == v, isinstance(v, str)]\n')
    expected = f"{torch_compat.TORCH_API_VERSION}+genesis.{genesis.__version__}"
    assert torch_compat.run(str(script), [])["losses"] == [expected, True, True, True, True]
    for a in (expected, "2.11.0", "2.1.0+cu118", "2.13.0"):
        for b in ("1.10", "2.13", "2.13.0", (2, 0), (2, 13), (3,), "2.11.0+cpu", "2.13.0+genesis.0.1.0"):
            for op in (operator.lt, operator.le, operator.gt, operator.ge):
                assert op(torch_compat.TorchVersion(a), b) == op(TorchsVersion(a), b), (a, b, op)
