"""Reading one answer back from the child: bounded in time and memory, whatever bytes it wrote.

The child runs student code, so its reply may be forged. An answer is read in three steps, each
refusing what a probe never sends before the next one can be made to do much work:

1. the archive: a torch.save zip whose members are stored, not compressed (no zip bomb);
2. the pickle, scanned op by op without building anything: only the globals torch.save writes for
   dense tensors, no long string or integer, not too many ops, not too many bytes;
3. the loaded value (torch.load, weights_only), walked iteratively: a tree of plain values, within a
   node count and a depth, in which no container or tensor is reached twice (shared sublists would
   make a small pickle a huge value), and whose tensors hold every element they claim (a stride-0
   `expand` claims 10^9 elements from a storage of 1, and any copy or cast would make them real).

A refusal is an `Refused` (a ValueError) whose message says, in plain words, what the answer held.
"""
import io
import pickletools
import zipfile
from collections import OrderedDict

import torch

MAX_NODES = 100_000      # values in one answer (a probe sends a few hundred)
MAX_DEPTH = 32           # nesting of lists, tuples and dicts (a probe nests at most about 8)
MAX_TEXT = 1 << 16       # characters of one string, bytes of one bytes value
MAX_INT_BITS = 1024      # an integer's size (so that writing it in a message is cheap)
MAX_DIMS = 16            # a tensor's dimensions
MAX_PICKLE_BYTES = 1 << 22  # the answer's values besides tensor data
ATOMS = (type(None), bool, float, complex, torch.dtype, torch.device)


class Refused(ValueError):
    """An answer the grader will not use; the message says what it held."""


def read_answer(payload: bytes, limit: int):
    """The value of one torch.save archive from the child, or Refused. `limit`: bytes in all, and the
    most its tensors may claim together."""
    pickled, size = archive_pickle(payload, limit)
    scan_pickle(pickled)  # first, to name what is too large
    if size > MAX_PICKLE_BYTES:
        raise Refused(f"the answer held {size:,} bytes of values besides tensors "
                      f"(at most {MAX_PICKLE_BYTES:,} are read back)")
    try:
        answer = torch.load(io.BytesIO(payload), weights_only=True)  # plain data only: nothing the student made
    except Exception as exc:
        raise ValueError(f"the answer could not be read as plain data ({type(exc).__name__})") from None
    check_plain(answer, limit)
    return answer


def archive_pickle(payload: bytes, limit: int):
    """(the first MAX_PICKLE_BYTES + 1 bytes of the pickle, its size) of a torch.save zip whose members are
    stored within `limit` bytes in all."""
    if not stored_zip(payload, limit):
        raise ValueError("the answer was not in the form the sandbox writes")
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        pickles = [m for m in archive.infolist() if m.filename.endswith("/data.pkl") or m.filename == "data.pkl"]
        if len(pickles) != 1:
            raise ValueError("the answer was not in the form the sandbox writes")
        with archive.open(pickles[0]) as member:
            return member.read(MAX_PICKLE_BYTES + 1), pickles[0].file_size


def stored_zip(payload: bytes, limit: int) -> bool:
    """True for a torch.save zip whose members are stored, not compressed, within `limit` bytes in all:
    a forged answer could otherwise be a zip bomb that torch.load would inflate in the grader."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, RecursionError, EOFError):
        return False
    return (all(m.compress_type == zipfile.ZIP_STORED for m in members)
            and sum(m.file_size for m in members) <= limit)


# pickletools' codes for an argument whose length is written before it, and that length's width
_LENGTH_WIDTH = {pickletools.TAKEN_FROM_ARGUMENT1: 1, pickletools.TAKEN_FROM_ARGUMENT4: 4,
                 pickletools.TAKEN_FROM_ARGUMENT4U: 4, pickletools.TAKEN_FROM_ARGUMENT8U: 8}
_INTEGER_OPS = {"LONG1", "LONG4", "LONG"}
_BUILDING_OPS = {"STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4"}  # torch.save uses GLOBAL
_PLAIN_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"), ("collections", "OrderedDict"), ("torch", "device")}


def _plain_global(module: str, name: str) -> bool:
    """What torch.save writes for dense tensors, their storages and dtypes, devices and OrderedDicts."""
    if (module, name) in _PLAIN_GLOBALS:
        return True
    value = torch.__dict__.get(name) if module == "torch" else None  # no getattr: nothing imported on the way
    return isinstance(value, torch.dtype) or (name.endswith("Storage") and isinstance(value, type))


def scan_pickle(data: bytes):
    """Refuse a pickle with a string, bytes or integer too long, or too many ops, before loading it.

    Reads each op's length prefix and skips its argument: no value is built, so the scan costs
    nothing but time linear in the op count, which is capped."""
    pos, ops = 0, 0
    while pos < len(data):
        ops += 1
        if ops > 8 * MAX_NODES:
            raise Refused(f"the answer held more than {MAX_NODES:,} values")
        op = pickletools.code2op.get(chr(data[pos]))
        pos += 1
        if op is None:
            raise ValueError("the answer could not be read as plain data (not a pickle)")
        if op.name == "STOP":
            return
        n = op.arg.n if op.arg is not None else 0
        if n >= 0:
            size = n
        elif n == pickletools.UP_TO_NEWLINE:  # GLOBAL's module and name are two lines
            end = pos
            for _ in range(2 if op.arg.name == "stringnl_noescape_pair" else 1):
                end = data.find(b"\n", end) + 1 or len(data)
            size = end - pos
        else:
            width = _LENGTH_WIDTH[n]
            size = int.from_bytes(data[pos:pos + width], "little", signed=n == pickletools.TAKEN_FROM_ARGUMENT4)
            pos += width
        if op.name == "GLOBAL":
            module, _, name = data[pos:pos + size].decode("ascii", "replace").strip().partition("\n")
            if not _plain_global(module, name):
                raise Refused(f"the answer held {module[:60]}.{name[:60]}, which is not plain data (dicts, lists, "
                              "numbers, strings and dense tensors)")
        elif op.name in _BUILDING_OPS:
            raise ValueError("the answer was not in the form the sandbox writes")
        if size > MAX_TEXT:
            if op.name in _INTEGER_OPS:
                raise Refused(f"the answer held an integer of about {size * 8:,} bits (at most {MAX_INT_BITS} are read)")
            raise Refused(f"the answer held a string of {size:,} characters (at most {MAX_TEXT:,} are read back)")
        pos += max(size, 0)


def check_plain(answer, max_tensor_bytes: int):
    """Walk the loaded answer without recursion; refuse what a probe never sends (see the module's doc)."""
    seen = set()
    stack = [(answer, 0)]
    nodes = tensor_bytes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise Refused(f"the answer was nested more than {MAX_DEPTH} levels deep (lists in lists)")
        kind = type(value)
        if kind in ATOMS:
            continue
        if kind is int:
            if value.bit_length() > MAX_INT_BITS:
                raise Refused(f"the answer held an integer of {value.bit_length():,} bits")
            continue
        if kind is str or kind is bytes:
            if len(value) > MAX_TEXT:
                raise Refused(f"the answer held a string of {len(value):,} characters "
                              f"(at most {MAX_TEXT:,} are read back)")
            continue
        if kind is tuple and not value:  # the empty tuple is one object wherever it appears
            continue
        if id(value) in seen:
            raise Refused(f"the answer held the same {_kind_name(value)} more than once (a {_kind_name(value)} "
                          "that contains itself, or one shared by several places)")
        seen.add(id(value))
        if kind in (list, tuple, dict, OrderedDict):
            if nodes + len(stack) + len(value) * (2 if isinstance(value, dict) else 1) > MAX_NODES:
                raise Refused(f"the answer held more than {MAX_NODES:,} values")
            items = value.items() if isinstance(value, dict) else ((v,) for v in value)
            stack.extend((v, depth + 1) for pair in items for v in pair)
        elif kind is torch.Tensor:
            tensor_bytes += check_tensor(value)
            if tensor_bytes > max_tensor_bytes:
                raise Refused(f"the answer's tensors claim more than {max_tensor_bytes:,} bytes together")
        else:
            raise Refused(f"the answer held an object of type {kind.__name__[:80]}, which is not plain data")


def check_tensor(t: torch.Tensor) -> int:
    """Bytes `t` claims, once it is known to be a plain CPU tensor whose storage holds all of them."""
    if t.layout is not torch.strided or t.device.type != "cpu" or t.is_quantized or t.is_nested:
        raise Refused(f"the answer held a {str(t.layout).replace('torch.', '')} tensor on {t.device.type}; "
                      "only ordinary (dense, CPU) tensors are read back")
    if t.dim() > MAX_DIMS:
        raise Refused(f"the answer held a tensor with {t.dim()} dimensions")
    numel, itemsize = t.numel(), t.element_size()
    stored = t.untyped_storage().nbytes()
    reach = t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))  # elements addressed
    if numel and (numel * itemsize > stored or reach * itemsize > stored):
        raise Refused(f"the answer held a tensor of shape {tuple(t.shape)} that claims {numel:,} elements but "
                      f"stores {stored // itemsize:,} (a view made with expand, or with a zero or overlapping "
                      "stride, not a tensor of its own)")
    return numel * itemsize


def _kind_name(value) -> str:
    return {list: "list", tuple: "tuple", dict: "dict", OrderedDict: "dict"}.get(type(value), "tensor")
