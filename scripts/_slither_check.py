"""Compare Slither's JSON output with the committed triage file (standard library only).

    python scripts/_slither_check.py SLITHER_JSON TRIAGE_JSON [--all]

Exits 1 when a High or Medium finding matches no triage entry (each one is printed), 2 when
an input is malformed or Slither reported an error, else 0. Lower findings are counted, not
gating. Triage entries that match no finding are reported as stale (not gating).

A finding's key is (detector, contract, function, element), read from its first element:
`function` is the function or modifier it is in (its name, not its signature, so that overloads
share it), `element` the variable, struct, event ... it is about (for an uninitialized local:
the local's name), `contract` the contract it is in (or the source file for a finding outside
any contract). No line numbers and no Slither id (its hash covers the description, which
holds line numbers): a key survives unrelated edits. See docs/static-analysis.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

GATING = ("High", "Medium")
IMPACTS = ("High", "Medium", "Low", "Informational", "Optimization")
VERDICTS = ("false-positive", "accepted-risk")
ENTRY_FIELDS = {"detector", "contract", "function", "element", "verdict", "why"}
Key = tuple[str, str, str | None, str | None]


def _chain(element: dict[str, Any]) -> list[dict[str, Any]]:
    """The element and its parents, innermost first."""
    out = []
    e: dict[str, Any] | None = element
    while e:
        out.append(e)
        e = e.get("type_specific_fields", {}).get("parent")
    return out


def finding_key(result: dict[str, Any]) -> Key:
    elements = result.get("elements") or []
    detector = result["check"]
    if not elements:
        return (detector, "", None, None)
    first = elements[0]
    chain = _chain(first)
    contract = next((e["name"] for e in chain if e.get("type") == "contract"), None)
    function = next((e["name"] for e in chain if e.get("type") == "function"), None)
    element = None if first.get("type") in ("contract", "function", "node") else first.get("name")
    if contract is None:
        contract = first.get("source_mapping", {}).get("filename_relative", "")
    return (detector, contract, function, element)


def _located(result: dict[str, Any]) -> tuple[str, int | None]:
    """The file and first line of the most specific element (a statement if there is one)."""
    elements = result.get("elements") or []
    if not elements:
        return ("?", None)
    best = next((e for e in elements if e.get("type") == "node"), elements[0])
    sm = best.get("source_mapping", {})
    lines = sm.get("lines") or [None]
    return (sm.get("filename_relative", "?"), lines[0])


def _source_line(root: Path, file: str, line: int | None) -> str:
    if line is None:
        return ""
    try:
        return (root / file).read_text(encoding="utf-8").splitlines()[line - 1].strip()
    except (OSError, IndexError, UnicodeDecodeError):
        return ""


def _name(key: Key) -> str:
    _, contract, function, element = key
    return ".".join(part for part in (contract, function, element) if part)


def load_triage(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = data.get("triage") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f'{path}: expected an object with a "triage" list')
    for i, entry in enumerate(entries):
        where = f"{path}: triage[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        unknown = set(entry) - ENTRY_FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(ENTRY_FIELDS)}")
        for field in ("detector", "contract", "why"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise ValueError(f"{where}: {field!r} must be a non-empty string")
        for field in ("function", "element"):
            if field in entry and not (isinstance(entry[field], str) and entry[field]):
                raise ValueError(f"{where}: {field!r} must be a non-empty string when present")
        if entry.get("verdict") not in VERDICTS:
            raise ValueError(f"{where}: 'verdict' must be one of {VERDICTS}")
    return entries


def matches(entry: dict[str, Any], key: Key) -> bool:
    """Detector and contract equal; function and element equal, absent for absent, or "*" for any."""
    detector, contract, function, element = key
    if entry["detector"] != detector or entry["contract"] != contract:
        return False
    for field, value in (("function", function), ("element", element)):
        want = entry.get(field)
        if want != "*" and want != value:
            return False
    return True


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--all"]
    show_all = len(args) != len(argv)
    if len(args) != 2:
        print("usage: python scripts/_slither_check.py SLITHER_JSON TRIAGE_JSON [--all]", file=sys.stderr)
        return 2
    report_path, triage_path = Path(args[0]), Path(args[1])
    root = Path.cwd()  # Slither's paths are relative to the project root, where scripts/slither runs this
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
        entries = load_triage(triage_path)
    except (OSError, ValueError) as exc:
        print(f"slither check: {exc}", file=sys.stderr)
        return 2
    if not report.get("success", False):
        print(f"slither check: Slither reported an error: {report.get('error')}", file=sys.stderr)
        return 2
    results = (report.get("results") or {}).get("detectors") or []

    used = [False] * len(entries)
    untriaged = []
    counts = {impact: [0, 0] for impact in IMPACTS}  # impact -> [findings, triaged]
    listing = []
    for result in results:
        key = finding_key(result)
        hit = next((i for i, entry in enumerate(entries) if matches(entry, key)), None)
        if hit is not None:
            used[hit] = True
        impact = result.get("impact", "?")
        count = counts.setdefault(impact, [0, 0])
        count[0] += 1
        count[1] += hit is not None
        if impact in GATING and hit is None:
            untriaged.append((result, key))
        if show_all:
            listing.append((IMPACTS.index(impact) if impact in IMPACTS else 9, result, key, hit))

    def show(result: dict[str, Any], key: Key, label: str) -> None:
        file, line = _located(result)
        print(f"  [{result.get('impact')}/{result.get('confidence')}] {key[0]}  {_name(key)}  {label}".rstrip())
        code = _source_line(root, file, line)
        print(f"    {file}:{line}: {code}" if code else f"    {file}:{line}")
        for text in result.get("description", "").strip().splitlines():
            print(f"      {text.strip()}")

    if show_all:
        print("slither: every finding")
        for _, result, key, hit in sorted(listing, key=lambda item: item[0]):
            label = f"(triaged: {entries[hit]['verdict']})" if hit is not None else "(not triaged)"
            show(result, key, label)
    untriaged.sort(key=lambda item: GATING.index(item[0]["impact"]))
    if untriaged:
        print(f"slither: {len(untriaged)} High/Medium finding(s) not triaged in {triage_path}:")
        for result, key in untriaged:
            show(result, key, "")
        print(
            "  Fix each one, or add an entry to the triage file (detector, contract, function, element,"
            " verdict, why); see docs/static-analysis.md."
        )
    stale = [entry for entry, u in zip(entries, used, strict=True) if not u]
    for entry in stale:
        key = (entry["detector"], entry["contract"], entry.get("function"), entry.get("element"))
        print(f"slither: stale triage entry (matches no finding; remove it): {key[0]} {_name(key)}")

    def part(impact: str) -> str:
        n, t = counts.get(impact, [0, 0])
        return f"{n} {impact.lower()}" + (f" ({t} triaged)" if t else "")

    print(
        f"slither: {len(results)} findings: {', '.join(part(i) for i in GATING)}; "
        f"not gating: {', '.join(part(i) for i in IMPACTS[2:])}"
    )
    if untriaged:
        print(f"slither: FAILED: {len(untriaged)} untriaged High/Medium finding(s)")
        return 1
    print("slither: ok (no untriaged High/Medium finding)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
