"""dynamic_loss_scaler: why a scaler's scales leave GradScaler's, in words (its visible and hidden checks'
messages)."""
import math


def why_scales_differ(init: dict, found_infs, got: list, want: list) -> str:
    """What the first update at which a dynamic scaler's scales (`got`, the scale before any update first)
    leave GradScaler's (`want`) shows, in words: the update's flag, what the scale did and what it should have
    done. It compares the two traces only; it computes no scale of its own."""
    if any(g is None for g in got) or len(got) < 2:
        return ""
    close = lambda a, b: math.isclose(a, b, rel_tol=1e-5)  # noqa: E731
    growth, backoff = init.get("growth_factor", 2.0), init.get("backoff_factor", 0.5)
    interval = init.get("growth_interval", 2000)
    if all(close(g, got[0]) for g in got) and not all(close(w, want[0]) for w in want):
        return (f" The scale never changed over {len(got) - 1} updates: update(found_inf) must back the scale off "
                "on an overflow and grow it after growth_interval clean updates.")
    k = next((k for k, (g, w) in enumerate(zip(got, want)) if not close(g, w)), None)
    if k is None:
        return ""
    if k == 0:
        return f" The scale starts at {got[0]:g}, not init_scale={want[0]:g}: store the init_scale argument."
    prev, now, should = want[k - 1], got[k], want[k]
    if found_infs[k - 1]:
        said = (f" Update {k} had an overflow: the scale "
                + (f"stayed {prev:g}" if close(now, prev) else f"went from {prev:g} to {now:g}")
                + f", but it should be {should:g}")
        if close(now, prev / backoff):
            return said + " (divided by backoff_factor): multiply by backoff_factor to back off."
        if close(now, prev * 0.5) and backoff != 0.5:
            return said + f" (halved): multiply by the backoff_factor argument ({backoff:g}), not by 0.5."
        if now > should and now <= 1.0:
            return said + ": the scale stopped at a minimum. GradScaler has no minimum scale: do not clamp it."
        if close(now, prev):
            return said + ": an overflow left it unchanged. On found_inf, scale *= backoff_factor."
        return said + f": on found_inf, scale *= backoff_factor ({backoff:g})."
    # a clean update: how many clean updates in a row it ends, since the last overflow or growth
    start = max([0] + [t + 1 for t in range(k - 1) if found_infs[t] or not close(want[t + 1], want[t])])
    clean, after = k - start, ("the last overflow" if start and found_infs[start - 1] else
                               "the last growth" if start else "the start")
    said = (f" Update {k} was clean update {clean} in a row since {after}: the scale "
            + (f"stayed {prev:g}" if close(now, prev) else f"went from {prev:g} to {now:g}"))
    if close(now, prev * 2.0) and growth != 2.0:
        return said + f" (doubled): multiply by the growth_factor argument ({growth:g}), not by 2."
    if close(should, prev):  # it grew, or changed, too early
        if after == "the last growth":
            return (said + f", but it should stay {should:g} until growth_interval={interval} clean updates "
                    "follow the growth: reset the count of clean updates to 0 when the scale grows.")
        if after == "the last overflow":
            return (said + f", but it should stay {should:g} until growth_interval={interval} clean updates "
                    "follow the overflow: an overflow must reset the count of clean updates to 0.")
        return said + f", but it should grow only after growth_interval={interval} clean updates in a row."
    if k < len(got) - 1 and not found_infs[k] and close(got[k + 1], prev * growth):
        return (said + f" and grew one update later, but it should grow to {should:g} as the count reaches "
                f"growth_interval={interval} (== growth_interval, not > growth_interval).")
    return said + f", but it should grow to {should:g}: growth_interval={interval} clean updates in a row grow it."
