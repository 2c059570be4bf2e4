"""How far ResNet-50's float32 gradients on cuda are from float64, in Genesis and in torch, for one batch.

    python benchmark/resnet_grad_accuracy.py [--batch 16] [--top 12]

Both libraries load the same initial weights (torch's, seed 0) and take one forward and backward pass on the same
batch with TF32 off; torch on the CPU in float64 is the reference. For each parameter the error is
max |g - g64| / max |g64|; the script prints the parameters where Genesis's error is largest with torch's beside
them, the medians, and the same for the running statistics. It tells a Genesis bug (its errors well above
torch's) from an ill-conditioned problem (both alike), which is what the ResNet-50 row's loss tolerance rests on.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark import programs as P


def one_pass(lib, model, images: np.ndarray, labels: np.ndarray, device: str) -> tuple[float, dict, dict]:
    """(loss, parameter gradients, running statistics) of one training-mode pass, as float64 numpy arrays."""
    model.to(device)
    model.train()
    x = lib.from_numpy(images.copy()).to(device)
    y = lib.from_numpy(labels.copy()).to(device)
    loss = lib.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    grads = {n: p.grad.cpu().numpy().astype(np.float64) for n, p in model.named_parameters()}
    stats = {n: b.detach().cpu().numpy().astype(np.float64) for n, b in model.named_buffers() if "running" in n}
    return float(loss.item()), grads, stats


def errors(got: dict, ref: dict) -> dict[str, float]:
    return {n: float(np.abs(got[n] - r).max() / (np.abs(r).max() + 1e-30)) for n, r in ref.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    for lib in (torch, genesis):
        lib.backends.cudnn.allow_tf32 = lib.backends.cuda.matmul.allow_tf32 = False
    cfg = P.ResNetConfig(batch=args.batch)
    torch.manual_seed(0)
    state = {k: v.detach().numpy().copy() for k, v in P.build_resnet(torch, cfg, True).state_dict().items()}
    images, labels = P.image_data(np.random.default_rng(0), cfg)
    results = {}
    for name, lib, device, dtype in (("float64", torch, "cpu", torch.float64), ("torch", torch, "cuda", None),
                                     ("genesis", genesis, "cuda", None)):
        lib.manual_seed(0)
        model = P.build_resnet(lib, cfg, True)
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
        if dtype is not None:
            model = model.to(dtype)
            images_in = images.astype(np.float64)
        else:
            images_in = images
        results[name] = one_pass(lib, model, images_in, labels, device)
    print(f"loss: float64 {results['float64'][0]:.9f}, torch {results['torch'][0]:.9f}, "
          f"genesis {results['genesis'][0]:.9f}")
    for k, what in ((1, "gradients"), (2, "running statistics")):
        g = errors(results["genesis"][k], results["float64"][k])
        t = errors(results["torch"][k], results["float64"][k])
        print(f"{what}: relative max error against float64 (genesis, torch), worst for Genesis first")
        for n in sorted(g, key=g.get, reverse=True)[:args.top]:
            print(f"  {g[n]:.2e}  {t[n]:.2e}  {n}")
        print(f"  median: genesis {np.median(list(g.values())):.2e}, torch {np.median(list(t.values())):.2e}")


if __name__ == "__main__":
    main()
