"""A notebook's structure measured in one pass over its bytes, before anything parses it.

Parsing costs far more memory than the bytes: an 18 MiB notebook whose one cell's source is a list of
2.1 million one-character strings took the grading process to 1.69 GiB in nbformat (a correct
notebook: 0.5 GiB), and one astral character in a string makes Python keep 4 bytes for each of its
characters (a 96 MiB output string: 0.77 GiB). The scan finds JSON's brackets, braces, commas and strings
with `find` and a small regular expression, and keeps only counters and a stack as deep as the document: no
string is copied but a key or a cell id, so it costs no more than the bytes it looks at (a regular expression
matching a whole string keeps state per escape: 110 MiB for a 2 MB source of line breaks). It stops at the
first bound passed. It does not check the JSON is valid: nbformat does that, once the bounds hold.

Besides the bounds it measures what staging needs to read the notebook cheaply (`measure`): where each code
cell's outputs are (nbgrader clears them: staging cuts them out of the bytes, unparsed), the cell ids, and
what the rest costs once read (`Measured.cost`: the bytes, the text decoded at its widest character's width,
and each string at its own). A caller that maps the file passes `release`, which the scan calls with how far
it has read, so the pages behind it can be given back: a file of any size is scanned in a few MiB.
"""
import re
from dataclasses import dataclass, field

SIGNIFICANT = re.compile(rb'[\[\]{},"]')  # outside strings: where a list, an object or a string starts or ends
KEY_END = re.compile(rb"\s*:")
KEY_BYTES = 64  # a string this long is no key the scan looks for ("cells", "source", "outputs", "id")
WINDOW = 4 << 20  # bytes searched at a time inside one string, and read between two calls of `release`
# a string's width once parsed: 4 bytes a character with an astral one (UTF-8 F0-F4, or an escaped surrogate),
# 2 with one past U+00FF (UTF-8 C4-EF, or an escape \u0100 and up), 1 otherwise
ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")
WIDE = re.compile(rb"[\xc4-\xef]|\\u(?:0[1-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F])")
RAW_ASTRAL, RAW_WIDE = re.compile(rb"[\xf0-\xf4]"), re.compile(rb"[\xc4-\xef]")
VALUE_BYTES = 100  # what one parsed value costs besides its characters: its object, its slot in a list or dict


@dataclass(frozen=True)
class Bounds:
    cells: int           # cells in the notebook
    list_strings: int    # strings in one list: a cell's source, an output's text (one per line)
    lines: int           # lines in the whole notebook: strings in lists, and line breaks in cell sources
    depth: int           # nesting of lists and objects


@dataclass
class Measured:
    bound: tuple = ()                             # (name, what it counts, limit) of the first bound passed, or ()
    outputs: list = field(default_factory=list)   # (start, end) of each code cell's outputs list, brackets included
    ids: list = field(default_factory=list)       # the cells' ids, as bytes (each at most KEY_BYTES)
    kept: int = 0                                  # bytes outside the outputs
    widest: int = 1                                # the widest character outside the outputs, as written (1, 2, 4)
    strings: int = 0                               # what the strings outside the outputs take once parsed
    values: int = 0                                # values outside the outputs (strings, containers, commas)

    @property
    def cost(self) -> int:
        """What reading the notebook without its outputs costs at most, in bytes: its bytes, its text decoded
        (at its widest character's width), its strings parsed, and an object for each value."""
        return self.kept * (1 + self.widest) + self.strings + self.values * VALUE_BYTES


def beyond(data, bounds: Bounds) -> tuple:
    """(the bound's name, what it counts, its limit) for the first bound `data` (bytes, an mmap) passes;
    () if it passes none."""
    return measure(data, bounds).bound


def measure(data, bounds: Bounds, release=None) -> Measured:
    """The bounds, the outputs, the cell ids and the cost of `data`; `release(offset)`, if given, is called as the
    scan passes each WINDOW of bytes (the scan never looks behind it again)."""
    found = Measured()
    # per open list or object: [is_object, key (an object's latest; a list's, in the object holding it),
    # expecting a key next, strings in it, whether it is a code cell's outputs]
    stack = []
    cells = lines = 0
    outputs_at = None
    edge = [WINDOW]  # the next offset at which to call release
    match = SIGNIFICANT.search(data)
    while match:
        start = match.start()
        char = data[start:start + 1]
        pos = start + 1
        if char == b'"':
            pos = string_end(data, start, release, edge)
            frame = stack[-1] if stack else None
            if frame and frame[0] and frame[2] and KEY_END.match(data, pos):  # an object's key
                frame[1], frame[2] = bytes(data[start:pos]) if pos - start <= KEY_BYTES else None, False
            elif frame:
                if not frame[0]:
                    frame[3] += 1
                    lines += 1
                    if frame[3] > bounds.list_strings:
                        found.bound = ("list_strings", "strings in one list (a cell's source, or an output's text)",
                                       bounds.list_strings)
                        return found
                if frame[1] == b'"source"':  # a cell's source, as one string or as a list of lines
                    lines += newlines(data, start, pos, bounds.lines - lines + 1, release, edge)
                elif frame[1] == b'"id"' and len(stack) == 3 and pos - start <= KEY_BYTES:
                    found.ids.append(bytes(data[start:pos]))
                if lines > bounds.lines:
                    found.bound = "lines", "lines of code and output", bounds.lines
                    return found
            if outputs_at is None:
                _weigh(data, start, pos, found)
                found.values += 1
        elif char in b"[{":
            if len(stack) == 2 and stack[0][1] == b'"cells"' and not stack[1][0] and char == b"{":
                cells += 1
                if cells > bounds.cells:
                    found.bound = "cells", "cells", bounds.cells
                    return found
            key = stack[-1][1] if stack and stack[-1][0] and char == b"[" else None
            is_outputs = len(stack) == 3 and key == b'"outputs"' and stack[0][1] == b'"cells"'
            if is_outputs:
                outputs_at = start
            elif outputs_at is None:
                found.values += 1
            stack.append([char == b"{", key, char == b"{", 0, is_outputs])
            if len(stack) > bounds.depth:
                found.bound = "depth", "levels of nested lists and objects", bounds.depth
                return found
        elif char in b"]}":
            if stack and stack.pop()[4]:
                found.outputs.append((outputs_at, pos))
                outputs_at = None
        else:  # a comma: another value follows (in an object, a key comes next)
            found.values += outputs_at is None
            if stack and stack[-1][0]:
                stack[-1][2] = True
        if release is not None and pos >= edge[0]:
            release(pos)
            edge[0] = pos + WINDOW
        match = SIGNIFICANT.search(data, pos)
    found.kept = len(data) - sum(end - start for start, end in found.outputs)
    return found


def _weigh(data, start: int, end: int, found: Measured):
    """Add what the string data[start:end] costs once parsed, and its widest character as written."""
    if ASTRAL.search(data, start, end):
        width = 4
        found.widest = max(found.widest, 4 if RAW_ASTRAL.search(data, start, end) else 1)
    elif WIDE.search(data, start, end):
        width = 2
        found.widest = max(found.widest, 2 if RAW_WIDE.search(data, start, end) else 1)
    else:
        width = 1
    found.strings += (end - start) * width


def _find(data, needle: bytes, start: int, end: int, release, edge) -> int:
    """data.find(needle, start, end), searched WINDOW bytes at a time, calling `release` as it goes."""
    pos = start
    while pos < end:
        stop = min(end, pos + WINDOW + len(needle) - 1)
        found = data.find(needle, pos, stop)
        if found >= 0 or stop == end:
            return found
        pos = stop - len(needle) + 1
        if release is not None and pos >= edge[0]:
            release(pos)
            edge[0] = pos + WINDOW
    return -1


def string_end(data, start: int, release=None, edge=None) -> int:
    """Where the JSON string opening at `start` ends (after its closing quote; the end of data if none)."""
    edge = edge if edge is not None else [WINDOW]
    pos = start + 1
    while True:
        quote = _find(data, b'"', pos, len(data), release, edge)
        if quote < 0:
            return len(data)
        if escaped(data, quote, start):
            pos = quote + 1
        else:
            return quote + 1


def escaped(data, index: int, start: int) -> bool:
    """Whether the byte at `index` follows an odd run of backslashes (after `start`): an escaped character."""
    k = index - 1
    while k > start and data[k] == 0x5C:
        k -= 1
    return (index - 1 - k) % 2 == 1


def newlines(data, start: int, end: int, enough: int, release=None, edge=None) -> int:
    """The \\n escapes in data[start:end] (an escaped backslash before an n is none), counted up to `enough`."""
    edge = edge if edge is not None else [WINDOW]
    count, pos = 0, start
    while count < enough:
        found = _find(data, b"\\n", pos, end, release, edge)
        if found < 0:
            break
        if not escaped(data, found, start):  # this backslash starts an escape: a line break
            count += 1
        pos = found + 1
    return count


def without_outputs(data, outputs: list) -> bytes:
    """`data` with each code cell's outputs list (Measured.outputs) written as [], copied without parsing."""
    parts, last = [], 0
    for start, end in outputs:
        parts += [data[last:start], b"[]"]
        last = end
    parts.append(data[last:])
    return b"".join(bytes(p) for p in parts)
