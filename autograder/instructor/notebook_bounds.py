"""A notebook's structure measured in one pass over its bytes, before anything parses it.

Parsing costs far more memory than the bytes: an 18 MiB notebook whose one cell's source is a list of
2.1 million one-character strings took the grading process to 1.69 GiB in nbformat (a correct
notebook: 0.5 GiB). The scan finds JSON's brackets, braces, commas and strings with `find` and a
small regular expression, and keeps only counters and a stack as deep as the document: no string is
copied but a key, so it costs no more than the bytes it looks at (a regular expression matching a
whole string keeps state per escape: 110 MiB for a 2 MB source of line breaks). It stops at the first
bound passed. It does not check the JSON is valid: nbformat does that, once the bounds hold.
"""
import re
from dataclasses import dataclass

SIGNIFICANT = re.compile(rb'[\[\]{},"]')  # outside strings: where a list, an object or a string starts or ends
KEY_END = re.compile(rb"\s*:")
KEY_BYTES = 64  # a string this long is no key the scan looks for ("cells", "source")


@dataclass(frozen=True)
class Bounds:
    cells: int           # cells in the notebook
    list_strings: int    # strings in one list: a cell's source, an output's text (one per line)
    lines: int           # lines in the whole notebook: strings in lists, and line breaks in cell sources
    depth: int           # nesting of lists and objects


def beyond(data, bounds: Bounds) -> tuple:
    """(the bound's name, what it counts, its limit) for the first bound `data` (bytes, an mmap) passes;
    () if it passes none."""
    # per open list or object: [is_object, key (an object's latest; a list's, in the object holding it),
    # expecting a key next, strings in it]
    stack = []
    cells = lines = 0
    match = SIGNIFICANT.search(data)
    while match:
        start = match.start()
        char = data[start:start + 1]
        pos = start + 1
        if char == b'"':
            pos = string_end(data, start)
            frame = stack[-1] if stack else None
            if frame and frame[0] and frame[2] and KEY_END.match(data, pos):  # an object's key
                frame[1], frame[2] = bytes(data[start:pos]) if pos - start <= KEY_BYTES else None, False
            elif frame:
                if not frame[0]:
                    frame[3] += 1
                    lines += 1
                    if frame[3] > bounds.list_strings:
                        return ("list_strings", "strings in one list (a cell's source, or an output's text)",
                                bounds.list_strings)
                if frame[1] == b'"source"':  # a cell's source, as one string or as a list of lines
                    lines += newlines(data, start, pos, bounds.lines - lines + 1)
                if lines > bounds.lines:
                    return "lines", "lines of code and output", bounds.lines
        elif char in b"[{":
            if len(stack) == 2 and stack[0][1] == b'"cells"' and not stack[1][0] and char == b"{":
                cells += 1
                if cells > bounds.cells:
                    return "cells", "cells", bounds.cells
            key = stack[-1][1] if stack and stack[-1][0] and char == b"[" else None
            stack.append([char == b"{", key, char == b"{", 0])
            if len(stack) > bounds.depth:
                return "depth", "levels of nested lists and objects", bounds.depth
        elif char in b"]}":
            if stack:
                stack.pop()
        elif stack and stack[-1][0]:  # a comma in an object: a key comes next
            stack[-1][2] = True
        match = SIGNIFICANT.search(data, pos)
    return ()


def string_end(data, start: int) -> int:
    """Where the JSON string opening at `start` ends (after its closing quote; the end of data if none)."""
    pos = start + 1
    while True:
        quote = data.find(b'"', pos)
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


def newlines(data, start: int, end: int, enough: int) -> int:
    """The \\n escapes in data[start:end] (an escaped backslash before an n is none), counted up to `enough`."""
    count, pos = 0, start
    while count < enough:
        found = data.find(b"\\n", pos, end)
        if found < 0:
            break
        if not escaped(data, found, start):  # this backslash starts an escape: a line break
            count += 1
        pos = found + 1
    return count
