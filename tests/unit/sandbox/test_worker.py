"""autograder.sandbox.worker: the sandbox's own files, loaded by path as modules no student code finds by name."""
import sys

from autograder.sandbox import isolation, worker


def test_the_parts_are_loaded_by_path_and_kept_out_of_sys_modules():
    parts = worker.Parts(str(isolation.HERE), str(isolation.HERE / "guard.py"))
    assert [p.rsplit("/", 1)[-1] for p in parts.paths] == [f"{name}.py" for name in worker.PARTS] + ["guard.py"]
    for name in (*worker.PARTS, "guard"):
        module = getattr(parts, name)
        assert module.__name__ == f"lesson20_{name}" and module.__name__ not in sys.modules
    assert parts.child.Child and parts.standins.compile_stand_ins and parts.cleanup.Snapshot


def test_every_part_is_bound_into_the_sandbox():
    cmd = isolation.command(isolation.Limits(), True, None, None)
    bound = {cmd[i + 2] for i, arg in enumerate(cmd) if arg == "--ro-bind"}
    assert {f"{isolation.BOX}/{name}.py" for name in (*worker.PARTS, "worker", "guard")} <= bound
