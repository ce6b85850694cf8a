"""The checks' inputs: seeded batches and values, the same on every machine and torch version."""
import torch


def log_uniform(n: int, low: float, high: float, seed: int, dtype=torch.float32, signed=True):
    """n values whose log2-magnitudes are uniform in [low, high]."""
    g = torch.Generator().manual_seed(seed)
    logs = torch.rand(n, generator=g, dtype=torch.float64) * (high - low) + low
    values = torch.pow(2.0, logs)
    if signed:
        values = values * torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    return values.to(dtype)


def classification_batch(n: int, features: int, classes: int, seed: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, features, generator=g).to(dtype),
            torch.randint(0, classes, (n,), generator=g))


def regression_batch(n: int, features: int, outputs: int, seed: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, features, generator=g).to(dtype), torch.randn(n, outputs, generator=g).to(dtype)


def token_batch(n: int, length: int, vocab: int, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n, length), generator=g), torch.randint(0, classes, (n,), generator=g)


def token_batch_of_lengths(lengths, vocab: int, seed: int, ignore_index: int = -100, pad_id: int = 0,
                           masked_prefix: int = 0):
    """Sequences of the given lengths, padded to the longest: token ids (B, T) and targets (B, T).

    Targets past a sequence's end are ignore_index (padding), and so are its first `masked_prefix`
    targets (a prompt that does not count, as in instruction tuning).
    """
    g = torch.Generator().manual_seed(seed)
    longest = max(lengths)
    inputs = torch.full((len(lengths), longest), pad_id, dtype=torch.long)
    targets = torch.full((len(lengths), longest), ignore_index, dtype=torch.long)
    for row, n in enumerate(lengths):
        inputs[row, :n] = torch.randint(0, vocab, (n,), generator=g)
        targets[row, :n] = torch.randint(0, vocab, (n,), generator=g)
        targets[row, :min(masked_prefix, n)] = ignore_index
    return inputs, targets
