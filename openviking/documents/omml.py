"""Office math (OMML, the ``m:`` elements of a Word document) written as LaTeX: fractions, scripts,
radicals, n-ary operators, delimiters, functions, accents, bars, limits, arrays and matrices; a
symbol is kept as the character it is (``θ``, ``×``), as markitdown does, so that a search for
it finds it."""

from __future__ import annotations

from typing import Any

__all__ = ["latex"]

_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_N_ARY = {"∑": "\\sum", "∏": "\\prod", "∐": "\\coprod", "∫": "\\int", "∬": "\\iint", "∭": "\\iiint", "∮": "\\oint"}
_ACCENTS = {"̂": "\\hat", "̃": "\\tilde", "̄": "\\bar", "̇": "\\dot", "̈": "\\ddot", "⃗": "\\vec", "́": "\\acute"}
_SKIPPED = {"rPr", "ctrlPr", "fPr", "sSupPr", "sSubPr", "sSubSupPr", "radPr", "naryPr", "dPr", "funcPr", "accPr"}


def latex(element: Any) -> str:
    """The LaTeX of an ``m:oMath`` element (or any OMML element below one)."""
    return "".join(_node(child) for child in element).strip()


def _local(element: Any) -> str:
    tag = element.tag if isinstance(element.tag, str) else ""
    return tag[len(_M) :] if tag.startswith(_M) else ""


def _child(element: Any, name: str) -> Any:
    return element.find(_M + name)


def _part(element: Any, name: str) -> str:
    found = _child(element, name)
    return latex(found) if found is not None else ""


def _value(element: Any, path: str, default: str) -> str:
    found = element.find(path.replace("m:", _M))
    return found.get(_M + "val", default) if found is not None else default


def _node(element: Any) -> str:
    name = _local(element)
    if not name or name in _SKIPPED:
        return ""
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(element)
    return latex(element)  # a container (m:e, m:num, m:oMath...) is what it holds


def _run(element: Any) -> str:
    return "".join(t.text or "" for t in element.iter(_M + "t"))


def _fraction(element: Any) -> str:
    kind = _value(element, "m:fPr/m:type", "bar")
    num, den = _part(element, "num"), _part(element, "den")
    if kind == "lin":
        return f"{num}/{den}"
    if kind == "noBar":
        return f"\\genfrac{{}}{{}}{{0pt}}{{}}{{{num}}}{{{den}}}"
    return f"\\frac{{{num}}}{{{den}}}"


def _superscript(element: Any) -> str:
    return f"{_part(element, 'e')}^{{{_part(element, 'sup')}}}"


def _subscript(element: Any) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'sub')}}}"


def _sub_superscript(element: Any) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'sub')}}}^{{{_part(element, 'sup')}}}"


def _pre_scripts(element: Any) -> str:
    return f"{{}}_{{{_part(element, 'sub')}}}^{{{_part(element, 'sup')}}}{_part(element, 'e')}"


def _radical(element: Any) -> str:
    degree = _part(element, "deg")
    return f"\\sqrt[{degree}]{{{_part(element, 'e')}}}" if degree else f"\\sqrt{{{_part(element, 'e')}}}"


def _n_ary(element: Any) -> str:
    symbol = _value(element, "m:naryPr/m:chr", "∫")
    operator = _N_ARY.get(symbol, symbol)
    low, high = _part(element, "sub"), _part(element, "sup")
    scripts = (f"_{{{low}}}" if low else "") + (f"^{{{high}}}" if high else "")
    return f"{operator}{scripts}{{{_part(element, 'e')}}}"


def _delimiter(element: Any) -> str:
    opening = _value(element, "m:dPr/m:begChr", "(")
    closing = _value(element, "m:dPr/m:endChr", ")")
    separator = _value(element, "m:dPr/m:sepChr", "|")
    items = [latex(e) for e in element.findall(_M + "e")]
    left = "\\left" + (opening.replace("{", "\\{") or ".")
    right = "\\right" + (closing.replace("}", "\\}") or ".")
    return f"{left}{separator.join(items)}{right}"


def _function(element: Any) -> str:
    return f"{_part(element, 'fName')}{{{_part(element, 'e')}}}"


def _accent(element: Any) -> str:
    command = _ACCENTS.get(_value(element, "m:accPr/m:chr", "̂"), "\\hat")
    return f"{command}{{{_part(element, 'e')}}}"


def _bar(element: Any) -> str:
    over = _value(element, "m:barPr/m:pos", "bot") == "top"
    return f"\\{'overline' if over else 'underline'}{{{_part(element, 'e')}}}"


def _lower_limit(element: Any) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'lim')}}}"


def _upper_limit(element: Any) -> str:
    return f"{_part(element, 'e')}^{{{_part(element, 'lim')}}}"


def _equation_array(element: Any) -> str:
    rows = [latex(e) for e in element.findall(_M + "e")]
    return "\\begin{array}{l}" + " \\\\ ".join(rows) + "\\end{array}"


def _matrix(element: Any) -> str:
    rows = [" & ".join(latex(e) for e in row.findall(_M + "e")) for row in element.findall(_M + "mr")]
    return "\\begin{matrix}" + " \\\\ ".join(rows) + "\\end{matrix}"


_HANDLERS = {
    "r": _run,
    "f": _fraction,
    "sSup": _superscript,
    "sSub": _subscript,
    "sSubSup": _sub_superscript,
    "sPre": _pre_scripts,
    "rad": _radical,
    "nary": _n_ary,
    "d": _delimiter,
    "func": _function,
    "acc": _accent,
    "bar": _bar,
    "limLow": _lower_limit,
    "limUpp": _upper_limit,
    "eqArr": _equation_array,
    "m": _matrix,
}
