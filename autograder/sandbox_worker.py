"""The process that runs a submission's code, inside the sandbox.

It executes the extracted cells, then answers probe requests: one JSON line on stdin names
a probe and a spec file; the answer is written with torch.save and announced on fd 3. It
decides nothing: the grader loads the answer with weights_only=True and judges it.

Imports only the standard library, torch and probes.py (copied next to this file).
"""
import ast
import json
import os
import resource
import sys
import time
import traceback


def apply_limits():
    """Lower this process's limits before any student code runs (they are inherited, and cannot be raised back)."""
    for name, value in json.loads(os.environ.get("LESSON20_LIMITS", "{}")).items():
        if value is not None:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def main(workdir: str):
    apply_limits()
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, workdir)
    import probes

    # keep our own references: student code may rebind torch.save, json.dumps or os.write
    save, load, dumps, write, run = torch.save, torch.load, json.dumps, os.write, probes.run
    control = int(os.environ.get("LESSON20_CONTROL_FD", "3"))

    def reply(message: dict):
        write(control, (dumps(message) + "\n").encode())

    with open(os.path.join(workdir, "cells.json")) as f:
        cells = json.load(f)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    problems = []
    for cell in cells:
        # a solution cell runs whole, as in Jupyter; other cells statement by statement, so that
        # an import the sandbox lacks (the lesson's own helpers) does not stop the ones after it
        parts = [cell["source"]] if cell["solution"] else [ast.Module([node], []) for node in ast.parse(cell["source"]).body]
        for part in parts:
            try:
                exec(compile(part, cell["label"], "exec"), namespace)
            except BaseException as exc:  # the student's SystemExit too: record it, keep loading
                if not cell["solution"] and isinstance(exc, ImportError):
                    continue
                info = probes.describe_exception(exc)
                frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == cell["label"]]
                line = frames[-1].lineno if frames else getattr(exc, "lineno", None)
                problems.append({"cell": cell["index"], "line": line, **info})
                if cell["solution"]:
                    break
    reply({"ready": True, "problems": problems[:20]})

    for raw in sys.stdin:
        request = json.loads(raw)
        budget = request.get("cpu_seconds")
        if budget:
            used = resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            want = int(used + budget) + 1
            try:
                resource.setrlimit(resource.RLIMIT_CPU, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
            except (ValueError, OSError):
                pass
        spec = load(request["spec_file"], weights_only=True)
        started = time.time()
        answer = run(namespace, request["probe"], spec)
        out = os.path.join(workdir, "io", f"answer-{request['id']}.pt")
        save(answer, out + ".part")
        os.replace(out + ".part", out)
        reply({"id": request["id"], "file": out, "seconds": round(time.time() - started, 3)})


if __name__ == "__main__":
    main(sys.argv[1])
