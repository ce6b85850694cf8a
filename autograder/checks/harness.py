"""The probes' registry and `run`: what every probe (exercises/<id>/probes.py) is registered in and run by,
and the Context each is handed.

A probe runs wherever the student's code lives: in the student's kernel for a self-check,
or in the grading sandbox. It never decides pass or fail (the checks do, in their own
process), and what it returns is only tensors, numbers, strings, lists and dicts, so that
`torch.load(..., weights_only=True)` can carry it out of the sandbox. This file, plain_data.py (what the
student's code returned or raised, as plain data) and models.py (what the probes hand to the student's code)
import nothing but torch and the standard library: the sandbox binds them alone.

In the sandbox plain_data.py, models.py, this file and then every exercise's probes.py are executed into one
namespace for each request, after the notebook's cells have run (sandbox/isolation.py, PROBE_FILES); that is
done twice: once for the probes themselves, once for the models, losses and scaler subclass that the probes
hand to the student's code (the Context's `props`). Whatever the student's code can reach from what it is
handed (a method's __globals__, say) is then that second copy, never the probes' own namespace. Imported as a
module (in a kernel, in the checks' process), each file imports what it uses from the others.
"""
import contextlib

import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from .models import LOSSES, build_model, counting, graphs_alive, recorded_loss, recorded_model  # noqa: F401
    from .plain_data import describe_exception, traceback_entries

PROBES = {}


class StudentRaised(Exception):
    """The student's code raised; `info` describes where and what, as plain data."""
    def __init__(self, call: str, info: dict):
        super().__init__(call)
        self.call, self.info = call, info


class Missing(Exception):
    """A name the probe needs is not defined (or is not callable) in the student's namespace."""


class Context:
    """Where one probe request runs, handed to the probe with the student's namespace: the namespace whose
    models, losses and helpers the probe hands to the student's code (`props`), the device it builds them on,
    and the reader of a traceback's levels (`entries`: in the sandbox, the sandbox's own, bound before any
    student code)."""

    def __init__(self, props: dict, device: torch.device, entries):
        self.props, self.device, self.entries = props, device, entries

    def prop(self, name: str):
        """A loss, helper or class whose objects go to the student's code."""
        return self.props[name]

    def model(self, spec: dict):
        """models.build_model(spec), from `props`, on the Context's device."""
        return self.props["build_model"](spec, device=self.device)

    def recorded_model(self, spec: dict, at_most: int = None):
        """(model, sizes): models.recorded_model, from `props`, on the Context's device."""
        return self.props["recorded_model"](spec, at_most, self.device)

    def graphs_alive(self, calls: list):
        """models.graphs_alive, from `props`: its hooks are torch's global saved-tensor hooks while a call runs,
        where the student's code can find them, so they and what their functions' globals hold are the copy the
        student's code is handed anyway, never the probes' own namespace."""
        return self.props["graphs_alive"](calls)

    def describe_exception(self, exc: BaseException) -> dict:
        return describe_exception(exc, self.entries)

    def call(self, what: str, fn, *args, **kwargs):
        """Call the student's `fn`; any exception becomes StudentRaised with a plain description."""
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:  # SystemExit and friends from student code are theirs too
            raise StudentRaised(what, self.describe_exception(exc)) from None


def probe(fn):
    """Register `fn(ctx, namespace, **spec) -> dict` as a probe, under its name."""
    PROBES[fn.__name__] = fn
    return fn


def run(namespace: dict, name: str, spec: dict, device: str = "cpu", props: dict = None, entries=None) -> dict:
    """Run probe `name` against `namespace`; always returns plain data, never raises.

    torch's global defaults (dtype, grad mode, device) are set to the usual ones while it runs (a cell may
    have changed them), and put back afterwards (in the student's kernel, they are the student's).
    device: where the probe builds its models and puts the spec's tensors ("cuda" for the self-check's smoke
    run on a student's GPU; what it reports comes back on the CPU all the same).
    props: the namespace the objects handed to the student's code come from (the sandbox's second copy of
    these files); None: this one. entries: the traceback reader (plain_data.traceback_entries unless given).
    """
    context = Context(globals() if props is None else props, torch.device(device),
                      traceback_entries if entries is None else entries)
    with usual_defaults():
        return _run(namespace, name, on_device(spec, context.device), context)


def on_device(value, device: torch.device):
    """The spec with its tensors (in dicts, lists and tuples) moved to `device`; itself when that is the CPU."""
    if device.type == "cpu" or isinstance(value, torch.Tensor):
        return value if device.type == "cpu" else value.to(device)
    if isinstance(value, dict):
        return {k: on_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(on_device(v, device) for v in value)
    return value


@contextlib.contextmanager
def usual_defaults():
    """torch's global defaults as the checks expect them (float32, grad mode on, the CPU), put back after:
    a GPU notebook's torch.set_default_device("cuda") is the student's, not the checks'."""
    dtype, grad, device = torch.get_default_dtype(), torch.is_grad_enabled(), default_device()
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    if device.type != "cpu":
        torch.set_default_device("cpu")
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        if device.type != "cpu":
            torch.set_default_device(device)


def default_device() -> torch.device:
    """The device factory functions use when given none (torch.set_default_device), read without making a
    tensor there (torch.get_default_device makes one, which fails for "cuda" on a CPU-only build)."""
    import torch.utils._device as device_mode
    current = getattr(device_mode, "CURRENT_DEVICE", None)
    return torch.device(current) if current is not None else torch.device("cpu")


def _run(namespace: dict, name: str, spec: dict, context: Context) -> dict:
    try:
        return {"status": "ok", **PROBES[name](context, namespace, **spec)}
    except Missing as exc:
        return {"status": "missing", "name": str(exc)}
    except StudentRaised as exc:
        return {"status": "raised", "call": exc.call, **exc.info}
    except BaseException as exc:  # what the code returned broke the probe itself (a lying object, say)
        info = describe_exception(exc, context.entries)
        return {"status": "error", "message": f"the check could not use what your code returned or left behind: "
                                              f"{info['type']}: {info['message']}"}


def lookup(namespace: dict, name: str):
    if name not in namespace:
        raise Missing(name)
    return namespace[name]
