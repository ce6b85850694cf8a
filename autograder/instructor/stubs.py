"""ClearSolutionsNamed: the release step (pipeline.RELEASE) that turns solution regions into stubs that
name their exercise and the function to write."""
import re

from nbgrader.preprocessors import ClearSolutions

from ..items import item_of_cell


class ClearSolutionsNamed(ClearSolutions):
    """nbgrader's ClearSolutions, whose stubs say which exercise and which function to write.

    Inside a function the stub raises NotImplementedError naming both; a top-level region of
    assignments (`Q5_ANSWER = "b"`) becomes `Q5_ANSWER = ...` for the student to fill in.
    """

    def _replace_solution_region(self, cell, language):
        lines = cell.source.split("\n")
        exercise = item_of_cell(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
        out, start, replaced = [], None, False
        for i, line in enumerate(lines):
            if self.begin_solution_delimeter in line:
                if start is not None:
                    raise RuntimeError("encountered nested begin solution statements")
                start = i
            elif self.end_solution_delimeter in line and start is not None:
                out += self._stub(cell.cell_type, lines, start, i, exercise, language)
                start, replaced = None, True
            elif start is None:
                out.append(line)
        if start is not None:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(out)
        return replaced

    def _stub(self, cell_type, lines, start, end, exercise, language):
        if cell_type != "code":
            return self.text_stub.split("\n")
        indent = re.match(r"\s*", lines[start]).group(0)
        qualname = _enclosing_function(lines[:start], indent)
        if qualname:
            return [f"{indent}# YOUR CODE HERE",
                    f'{indent}raise NotImplementedError("{exercise}: write the body of {qualname}()")']
        names = [m.group(1) for m in (re.match(r"\s*([A-Za-z_]\w*)\s*=", ln) for ln in lines[start + 1:end]) if m]
        if names:
            return [f"{indent}{name} = ...  # YOUR ANSWER HERE" for name in names]
        return [indent + ln for ln in self.code_stub[language].split("\n")]


def _enclosing_function(before, indent):
    """'Class.method' or 'function' for code at `indent` after the lines `before`, or None."""
    names, level = [], len(indent)
    for line in reversed(before):
        m = re.match(r"(\s*)(def|class)\s+(\w+)", line)
        if m and len(m.group(1)) < level:
            names.append((m.group(2), m.group(3)))
            level = len(m.group(1))
    if not names or names[0][0] != "def":
        return None
    return ".".join(name for _, name in reversed(names))
