"""Every public name of ``lib`` has a complete docstring (the book's STYLE: Google-style sections).

The rules, checked per module (one test parameter per module, so a failure names the module and lists every
offending name with the section it lacks):

1. The module defines ``__all__``.
2. Public names are the functions and classes in ``__all__`` that the module itself defines
   (``obj.__module__ == module.__name__``; constants and re-exports are skipped). Of a public class, its own
   public methods, properties, classmethods and staticmethods (those in the class's ``__dict__`` whose name
   does not start with ``_``; ``forward`` counts) are checked too; inherited members are not.
3. Every one has a docstring whose first line is a non-empty summary.
4. ``Args:`` names every parameter but ``self``/``cls`` (grouped entries like ``batch, heads, d_k:`` count; a
   ``*args``/``**overrides`` may be written with or without its stars). A class names its own ``__init__``'s
   parameters in its docstring; a dataclass names each of its fields under ``Attributes:`` (or ``Args:``).
5. A function or method whose return annotation is present and not ``None`` has ``Returns:`` (or ``Yields:``).
6. When the function's own body (not the functions or classes nested in it) raises a named exception
   (``raise X(...)``, ``raise X``, ``raise mod.X(...)``; a bare ``raise``, or re-raising a lower-case variable
   such as ``raise err``, does not count), ``Raises:`` names each such class. A class's ``__init__`` and
   ``__post_init__`` are checked this way against the class docstring.
7. The functions and classes of the modules in :data:`SOURCE_REQUIRED` have a ``Source:`` line (the paper,
   section, equation they implement).
8. The core a chapter displays, and the one-line checks that the entry points call (:data:`READER_FACING`), have
   the short form instead of rules 4-6: a summary line and at most :data:`READER_FACING_MAX_LINES` lines in all
   (what, shapes, source), with a ``Source:`` line for the functions and classes of the modules in
   :data:`SOURCE_REQUIRED` (a method's source is its class's). Full ``Args``/``Returns``/``Raises`` belong on the
   entry points that check what a reader passes in.

Section headers are lines equal to ``Args:``, ``Attributes:``, ``Returns:``, ``Yields:`` or ``Raises:`` (any
indentation); a ``Source:`` line may carry its text on the same line. A section runs to the next header or
the end of the docstring.

The checker functions (:func:`check_module`, :func:`check_function`, :func:`check_class`, ...) are importable
by path, so that a script can reuse them to count names and failures.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import textwrap
import types
from typing import Any, Protocol

import pytest

import lib

# Rule 7: where a docstring must say which paper (section, equation) the code implements.
# A module name maps to None (every public top-level function and class of the module) or to the set of
# the names that need it. Module names may change under a refactor: a missing module is skipped with a reason.
SOURCE_REQUIRED: dict[str, frozenset[str] | None] = {
    "lib.attention": None,
    "lib.positional": None,
    "lib.transformer": None,
    "lib.seq2seq": None,
    "lib.bert": None,
    "lib.gpt": None,
    "lib.efficient": None,
    "lib.modern": None,
    "lib.decode": None,
    "lib.bpe": frozenset({"train_bpe"}),
    "lib.metrics": frozenset({"corpus_bleu"}),
}

# Rule 8: the reader-facing core, displayed in a chapter: paper-shaped, with a docstring of a few lines.
# A module name maps to the names of its functions (``Class.method`` for methods) that take the short form.
READER_FACING: dict[str, frozenset[str]] = {
    "lib.training.recipe": frozenset({"noam_lr", "label_smoothed_cross_entropy"}),
    "lib.attention": frozenset({
        "scaled_dot_product_attention", "causal_mask", "padding_mask", "KeyValue.append", "MultiHeadAttention.forward",
        "MultiHeadAttention.project_query", "MultiHeadAttention.project_key_value", "MultiHeadAttention.split_heads",
        "MultiHeadAttention.merge_heads", "MultiHeadAttention.attend",
    }),
    "lib.positional": frozenset({"sinusoidal_positional_encoding", "PositionalEncoding.forward"}),
    "lib.transformer": frozenset({
        "TransformerConfig.tiny", "TransformerConfig.multi30k", "TransformerConfig.multi30k_wide",
        "TransformerConfig.base", "PositionwiseFeedForward.forward", "EncoderLayer.forward", "DecoderLayer.forward",
        "DecoderLayer.self_attention", "DecoderLayer.cross_attention", "Encoder.forward", "Decoder.forward",
        "Transformer.init_weights", "Transformer.embed", "Transformer.source_mask",
    }),
    "lib.seq2seq": frozenset({"Seq2Seq.init_decoder", "Seq2Seq.decoder_step"}),
    # the checks the entry points call, one line each, and the config machinery they run on
    "lib._checks": frozenset({
        "check_int", "check_probability", "check_attention_sizes", "check_positional", "check_token_ids",
    }),
    "lib.config": frozenset({"Config.preset"}),
    "lib.interfaces": frozenset({"check_config_types"}),
}  # fmt: skip
READER_FACING_MAX_LINES = 6

SECTION_HEADERS = ("Args", "Attributes", "Returns", "Yields", "Raises")


# --------------------------------------------------------------------------------------------
# Docstring parsing
# --------------------------------------------------------------------------------------------


def own_doc(obj: Any) -> str | None:
    """The object's own docstring, cleaned (never one inherited, never the one ``@dataclass`` makes up)."""
    doc = obj.__doc__ if isinstance(obj, (type, types.FunctionType, property)) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str):
        return None
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        # @dataclass writes "Name(field: type, ...)" into a class that has no docstring
        try:
            generated = obj.__name__ + str(inspect.signature(obj)).replace(" -> None", "")
        except (TypeError, ValueError):
            generated = None
        if doc == generated:
            return None
    return inspect.cleandoc(doc)


def summary_line(doc: str | None) -> str:
    """The docstring's first line, stripped ('' when there is no docstring)."""
    if not doc:
        return ""
    lines = inspect.cleandoc(doc).splitlines()
    return lines[0].strip() if lines else ""


def parse_sections(doc: str | None) -> dict[str, str]:
    """Split a docstring into its sections: ``{"Args": text, "Returns": text, "Source": text, ...}``.

    A header is a line equal to ``Args:``, ``Attributes:``, ``Returns:``, ``Yields:`` or ``Raises:`` (any
    indentation), or a line starting with ``Source:`` (whose text may follow on the same line). A section's
    text runs until the next header or the end; a header that occurs twice has its texts joined.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        stripped = line.strip()
        header = stripped[:-1] if stripped.endswith(":") and stripped[:-1] in SECTION_HEADERS else None
        if header is not None:
            current = sections.setdefault(header, [])
        elif stripped.startswith("Source:"):
            current = sections.setdefault("Source", [])
            current.append(stripped[len("Source:") :])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


_ENTRY = re.compile(r"^\s*(?P<names>`*\*{0,2}\w+`*(?:\s*,\s*`*\*{0,2}\w+`*)*)\s*(?:\([^)]*\))?\s*:(?:\s|$)")


def documented_names(section: str | None) -> set[str]:
    """The names of a section's entries: ``name: text``, ``name (type): text``, ``a, b, c: text``.

    Stars and backticks are dropped, so ``**overrides:`` documents ``overrides``.
    """
    names: set[str] = set()
    for line in (section or "").splitlines():
        match = _ENTRY.match(line)
        if match:
            names.update(n.strip().strip("`").lstrip("*").strip("`") for n in match["names"].split(","))
    return names


def _mentions(section: str, word: str) -> bool:
    """True when ``word`` occurs in ``section`` as a whole word (``lib.data.ChecksumError`` names ChecksumError)."""
    return re.search(rf"(?<!\w){re.escape(word)}\b", section) is not None


# --------------------------------------------------------------------------------------------
# Signatures and source
# --------------------------------------------------------------------------------------------


def parameter_names(func: Any, is_method: bool) -> list[str]:
    """The parameters a docstring must document: all but ``self``/``cls`` (and a method's first one)."""
    try:
        sig = inspect.signature(func, eval_str=False)
    except (TypeError, ValueError):
        return []
    params = list(sig.parameters.values())
    if is_method and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    return [p.name for p in params if p.name not in ("self", "cls")]


def returns_value(func: Any) -> bool:
    """True when ``func`` has a return annotation other than ``None`` (read as a string, not evaluated)."""
    try:
        ann = inspect.signature(func, eval_str=False).return_annotation
    except (TypeError, ValueError):
        return False
    if ann is inspect.Signature.empty or ann is None or ann is type(None):
        return False
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
    return text.strip().strip("'\"") not in ("None", "")


def _exception_name(node: ast.expr | None) -> str | None:
    """``X`` for ``raise X(...)``, ``raise X`` and ``raise mod.X(...)``; None for a lower-case variable."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return None
    return name if name[:1].isupper() else None


def raised_exceptions(func: Any) -> list[str]:
    """Names of the exceptions that ``func``'s own body raises, in order of appearance, without repeats.

    The body of a nested ``def``, ``lambda`` or ``class`` is not the function's own and is not walked.
    """
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(func)))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError):
        return []
    top = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if top is None:
        return []
    names: list[str] = []
    stack: list[ast.AST] = list(top.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Raise):
            name = _exception_name(node.exc)
            if name and name not in names:
                names.append(name)
        stack.extend(ast.iter_child_nodes(node))
    return names


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


def check_function(func: Any, needs_source: bool = False, is_method: bool = False) -> list[str]:
    """The rules a function or method breaks, as short phrases ('' list when it passes)."""
    if isinstance(func, (staticmethod, classmethod)):
        func = func.__func__
    func = inspect.unwrap(func)  # through functools.wraps decorators such as @torch.no_grad()
    doc = own_doc(func)
    if not summary_line(doc):
        return ["no docstring summary line"]
    sections = parse_sections(doc)
    problems: list[str] = []
    params = parameter_names(func, is_method)
    if params:
        if "Args" not in sections:
            problems.append(f"no Args: section (parameters {', '.join(params)})")
        else:
            missing = [p for p in params if p not in documented_names(sections["Args"])]
            if missing:
                problems.append(f"Args: does not document {', '.join(missing)}")
    if returns_value(func) and "Returns" not in sections and "Yields" not in sections:
        problems.append("no Returns: section")
    problems += _raises_problems(raised_exceptions(func), sections)
    if needs_source and not sections.get("Source", "").strip():
        problems.append("no Source: line")
    return problems


def check_reader_facing(func: Any, needs_source: bool = True) -> list[str]:
    """The rules a reader-facing core function's short docstring breaks (rule 8)."""
    if isinstance(func, (staticmethod, classmethod)):
        func = func.__func__
    doc = own_doc(inspect.unwrap(func))
    if not summary_line(doc):
        return ["no docstring summary line"]
    problems = []
    if needs_source and not parse_sections(doc).get("Source", "").strip():
        problems.append("no Source: line")
    lines = len(doc.splitlines())
    if lines > READER_FACING_MAX_LINES:
        problems.append(f"{lines} docstring lines: the short form has at most {READER_FACING_MAX_LINES}")
    return problems


def _raises_problems(raised: list[str], sections: dict[str, str]) -> list[str]:
    if not raised:
        return []
    if "Raises" not in sections:
        return [f"no Raises: section (raises {', '.join(raised)})"]
    missing = [name for name in raised if not _mentions(sections["Raises"], name)]
    return [f"Raises: does not name {', '.join(missing)}"] if missing else []


def _own_hook(cls: type, name: str) -> Any | None:
    """``cls.__dict__[name]`` when the class body defines it; None when absent or put there by machinery.

    ``@dataclass`` writes a generated ``__init__`` (compiled from a string: its file is ``<string>``), and
    ``typing.Protocol`` puts its own placeholder ``__init__`` into every protocol class (qualname
    ``_no_init_or_replace_init``); neither is the module's code.
    """
    func = cls.__dict__.get(name)
    code = getattr(func, "__code__", None)
    if code is None or code.co_filename.startswith("<"):
        return None
    if getattr(func, "__qualname__", "") != f"{cls.__qualname__}.{name}":
        return None
    return func


def check_class(cls: type, needs_source: bool = False) -> list[str]:
    """The rules a class's own docstring breaks (its members are checked by :func:`class_members`)."""
    doc = own_doc(cls)
    if not summary_line(doc):
        return ["no docstring summary line"]
    sections = parse_sections(doc)
    problems: list[str] = []
    documented = documented_names(sections.get("Args")) | documented_names(sections.get("Attributes"))
    if dataclasses.is_dataclass(cls):
        own = inspect.get_annotations(cls)  # this class's fields, not those it inherits
        fields = [f.name for f in dataclasses.fields(cls) if f.name in own]
        missing = [f for f in fields if f not in documented]
        if missing:
            problems.append(f"Attributes: does not document field(s) {', '.join(missing)}")
    init = _own_hook(cls, "__init__")
    if init is not None:
        params = parameter_names(init, is_method=True)
        args = documented_names(sections.get("Args"))
        if params and "Args" not in sections:
            problems.append(f"no Args: section for __init__ (parameters {', '.join(params)})")
        elif params:
            missing = [p for p in params if p not in args]
            if missing:
                problems.append(f"Args: does not document __init__ parameter(s) {', '.join(missing)}")
    raised: list[str] = []
    for hook in ("__init__", "__post_init__"):
        func = _own_hook(cls, hook)
        if func is not None:
            raised += [n for n in raised_exceptions(func) if n not in raised]
    problems += _raises_problems(raised, sections)
    if needs_source and not sections.get("Source", "").strip():
        problems.append("no Source: line")
    return problems


def class_members(cls: type) -> dict[str, Any]:
    """The class's own public methods, properties, classmethods and staticmethods, by name."""
    members = {}
    for name, value in cls.__dict__.items():
        if name.startswith("_"):
            continue
        is_function = callable(value) and not inspect.isclass(value) and inspect.isfunction(inspect.unwrap(value))
        if is_function or isinstance(value, (property, staticmethod, classmethod)):
            members[name] = value
    return members


def public_names(module: types.ModuleType) -> dict[str, Any]:
    """The functions and classes in ``module.__all__`` that the module defines itself, by name.

    A module without ``__all__`` (rule 1 fails for it) falls back to its top-level names without a leading
    underscore, so that its names can still be counted.
    """
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = {}
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj) or (callable(obj) and inspect.isfunction(inspect.unwrap(obj))):
            out[name] = obj
    return out


def check_module(module: types.ModuleType) -> dict[str, list[str]]:
    """Every public name of ``module`` (``Class.method`` for members) with the rules it breaks ([] if none)."""
    required = SOURCE_REQUIRED.get(module.__name__, frozenset())
    core = READER_FACING.get(module.__name__, frozenset())
    results: dict[str, list[str]] = {}
    for name, obj in public_names(module).items():
        needs_source = required is None or name in required
        if name in core:
            results[name] = check_reader_facing(obj, needs_source)
        elif inspect.isclass(obj):
            results[name] = check_class(obj, needs_source)
            for member_name, member in class_members(obj).items():
                qualname = f"{name}.{member_name}"
                if qualname in core:
                    results[qualname] = check_reader_facing(member, needs_source=False)
                elif isinstance(member, property):
                    results[qualname] = [] if summary_line(own_doc(member)) else ["no docstring summary line"]
                else:
                    results[qualname] = check_function(member, is_method=not isinstance(member, staticmethod))
        else:
            results[name] = check_function(obj, needs_source)
    return results


def lib_module_names(package: types.ModuleType = lib) -> list[str]:
    """Every module of the package (sub-packages included), ``__main__`` modules left out."""
    return sorted(
        name
        for _, name, _ in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        if name.rsplit(".", 1)[-1] != "__main__"
    )


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------

MODULES = lib_module_names()


@pytest.mark.parametrize("module_name", MODULES, ids=MODULES)
def test_module_defines_all(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert isinstance(getattr(module, "__all__", None), (list, tuple)), (
        f"{module_name} defines no __all__ (a list of its public names; [] if it has none)"
    )


@pytest.mark.parametrize("module_name", MODULES, ids=MODULES)
def test_public_docstrings_complete(module_name: str) -> None:
    module = importlib.import_module(module_name)
    failures = {name: problems for name, problems in check_module(module).items() if problems}
    if failures:
        pytest.fail(
            f"{module_name}: {len(failures)} public name(s) with incomplete docstrings:\n"
            + "\n".join(f"  {name}: {'; '.join(problems)}" for name, problems in failures.items()),
            pytrace=False,
        )


@pytest.mark.parametrize("module_name", sorted(READER_FACING), ids=sorted(READER_FACING))
def test_reader_facing_names_exist(module_name: str) -> None:
    """The READER_FACING table names functions that exist: a renamed one would silently lose its rule."""
    module = importlib.import_module(module_name)
    names = set(public_names(module))
    for name, obj in public_names(module).items():
        if inspect.isclass(obj):
            names |= {f"{name}.{member}" for member in class_members(obj)}
    missing = sorted(READER_FACING[module_name] - names)
    assert not missing, f"{module_name} has no public {', '.join(missing)}: update READER_FACING"


@pytest.mark.parametrize("module_name", sorted(SOURCE_REQUIRED), ids=sorted(SOURCE_REQUIRED))
def test_source_required_names_exist(module_name: str) -> None:
    """The SOURCE_REQUIRED table names modules and functions that exist (a refactor may have renamed them)."""
    if module_name not in MODULES:
        pytest.skip(f"{module_name} does not exist (renamed or removed?); its Source: rule is not applied")
    names = SOURCE_REQUIRED[module_name]
    if names is not None:
        module = importlib.import_module(module_name)
        missing = sorted(names - set(public_names(module)))
        if missing:
            pytest.skip(f"{module_name} has no public {', '.join(missing)}; its Source: rule is not applied")


# --------------------------------------------------------------------------------------------
# Self-test: the checker does report what is missing
# --------------------------------------------------------------------------------------------


def _fake_no_doc(x: int) -> int:
    return x


def _fake_missing_sections(x: int, y: int) -> int:
    """Add two numbers.

    Args:
        x: the first.
    """
    if x < 0:
        raise ValueError("x must be non-negative")
    return x + y


def _fake_complete(batch: int, heads: int, *args: Any, **overrides: Any) -> int:
    """Count something.

    Args:
        batch, heads: sizes.
        args: extra positional values.
        **overrides: extra settings.

    Returns:
        The count.

    Raises:
        ValueError: batch < 1.

    Source: Vaswani et al. 2017, Eq. (1).
    """
    if batch < 1:
        raise ValueError("batch")

    def inner() -> None:
        raise KeyError("not the outer function's")

    try:
        inner()
    except KeyError:  # a bare re-raise, which the checker must not count
        raise
    return batch * heads


def _fake_reraise_variable() -> None:
    """Re-raise a caught error (not a named exception)."""
    try:
        pass
    except OSError as err:  # re-raising a variable, which the checker must not count
        raise err


@dataclasses.dataclass
class _FakeConfig:
    """A config.

    Attributes:
        width: documented.
    """

    width: int
    depth: int

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError("width")

    @property
    def area(self) -> int:
        return self.width * self.depth

    def scaled(self, factor: int) -> int:
        """Scaled width."""
        return self.width * factor


class _FakeModule:
    """A layer without Args for its __init__."""

    def __init__(self, d_model: int) -> None:
        self.d_model = d_model

    def forward(self, x: int) -> int:
        """Forward.

        Args:
            x: input.

        Returns:
            Output.
        """
        return x


class _FakeProtocol(Protocol):
    """A protocol: typing puts a placeholder ``__init__`` into it, which is not the module's code."""

    def run(self) -> None:
        """Run."""


def _fake_core(step: int, warmup: int) -> float:
    """A schedule, paper-shaped: what and source, no Args.

    Source: Vaswani et al. 2017, Eq. (3).
    """
    return min(step**-0.5, step * warmup**-1.5)


def _fake_core_too_long(step: int) -> float:
    """A schedule with a full docstring where the short form is asked for.

    Args:
        step: the step.

    Returns:
        The rate.
    """
    return step**-0.5


def test_checker_reports_a_reader_facing_docstring_that_is_not_short() -> None:
    assert check_reader_facing(_fake_core) == []
    assert check_reader_facing(_fake_core_too_long) == [
        "no Source: line",
        "7 docstring lines: the short form has at most 6",
    ]
    assert check_reader_facing(_fake_no_doc) == ["no docstring summary line"]


def test_checker_reports_missing_sections() -> None:
    assert check_function(_fake_no_doc) == ["no docstring summary line"]
    problems = check_function(_fake_missing_sections, needs_source=True)
    assert "Args: does not document y" in problems
    assert "no Returns: section" in problems
    assert "no Raises: section (raises ValueError)" in problems
    assert "no Source: line" in problems
    assert check_function(_fake_complete, needs_source=True) == []
    assert check_function(_fake_reraise_variable) == []

    # the dataclass-generated __init__ asks for no Args:, the fields and __post_init__'s raise do
    assert check_class(_FakeConfig) == [
        "Attributes: does not document field(s) depth",
        "no Raises: section (raises ValueError)",
    ]
    members = class_members(_FakeConfig)
    assert set(members) == {"area", "scaled"}
    assert not summary_line(own_doc(members["area"]))
    assert check_function(members["scaled"], is_method=True) == [
        "no Args: section (parameters factor)",
        "no Returns: section",
    ]

    assert check_class(_FakeModule) == ["no Args: section for __init__ (parameters d_model)"]
    assert check_function(_FakeModule.forward, is_method=True) == []
    assert "__init__" in _FakeProtocol.__dict__ and check_class(_FakeProtocol) == []


def test_section_parser() -> None:
    doc = """Summary.

    Args:
        a, b: grouped.
        c (int): typed.
            d: a continuation that looks like an entry is harmless.
    Returns:
        x.
    Source: Vaswani et al. 2017, §3.5.
    Raises:
        ValueError: bad.
    """
    sections = parse_sections(doc)
    assert set(sections) == {"Args", "Returns", "Source", "Raises"}
    assert {"a", "b", "c"} <= documented_names(sections["Args"])
    assert "Vaswani" in sections["Source"] and "ValueError" in sections["Raises"]
    assert "ValueError" not in sections["Source"]
    assert parse_sections("Summary.\n\nReturns: inline text is not a header.") == {}
