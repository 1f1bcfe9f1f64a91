"""Run a model through its reference layers and its fast path on one batch (the fast-path tests)."""
import torch

from hierattn.models.layers import straightforward


def both_paths(model, batch, tolerance: float = 1e-4):
    """Forward and backward each way; logits and gradients must agree. Returns (reference, fast) outputs."""
    with straightforward():
        slow = model(batch)
    slow.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    fast = model(batch)
    fast.loss.backward()
    torch.testing.assert_close(fast.logits, slow.logits, atol=1e-5, rtol=tolerance)
    for name, p in model.named_parameters():
        if name in grads:
            torch.testing.assert_close(p.grad, grads[name], atol=1e-5, rtol=tolerance, msg=name)
    return slow, fast
