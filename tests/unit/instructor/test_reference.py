"""autograder.instructor.reference: the reference is executed from the instructor notebook, and its code
for the stand-ins holds every code item's names (tests/test_reference.py judges it against oracles)."""
import ast

from autograder.instructor.reference import reference, reference_components, reference_namespace
from autograder.items import AUTO_ITEMS


def test_the_namespace_defines_every_contract_name():
    namespace = reference_namespace()
    assert all(name in namespace for item in AUTO_ITEMS for name in item.names)


def test_the_components_define_every_code_items_names_and_no_answer():
    defined = {node.name for node in ast.parse(reference_components()).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    code = {name for item in AUTO_ITEMS if item.code for name in item.names}
    answers = {name for item in AUTO_ITEMS if not item.code for name in item.names}
    assert code <= defined and not answers & defined and "Q5_ANSWER" not in reference_components()


def test_the_backend_carries_the_components():
    assert reference().components == reference_components()
