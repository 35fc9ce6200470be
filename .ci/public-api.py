#!/usr/bin/env python3
"""The public-API scan: no third-party type in a public signature of the crates orchestrators link.

Reads the rustdoc JSON of each crate named on the command line (made by
`cargo rustdoc -p CRATE --lib -- -Zunstable-options --output-format json`, see .ci/run), walks
every item reachable from the crate root (modules, re-exports, types, fields, variants, inherent
methods, trait items, constants, aliases) and looks at every type those signatures name. A type
from a crate outside the standard library and this workspace is a finding: an orchestrator would
have to depend on that exact third-party version to call us. Trait implementations (`Serialize`,
`Error`, `From<…>`) are not signatures a caller writes against and are not scanned.

Prints the number of public items per crate (the figure the structure issue's table reports) and
every finding as `crate: path: third-party type`, then exits 1 if there is any finding, 2 on a
usage or input error.

usage: public-api.py DOC_DIR CRATE[:allow1,allow2] ...
"""

import json
import sys
from pathlib import Path

STANDARD = {"std", "core", "alloc"}


def scan(doc_dir: Path, crate: str, allowed: set[str]) -> tuple[list[str], list[str]]:
    """Returns (public item paths, findings) of one crate's rustdoc JSON."""
    data = json.loads((doc_dir / f"{crate}.json").read_text())
    index = data["index"]
    paths = data["paths"]
    crates = {int(key): value["name"] for key, value in data["external_crates"].items()}

    def crate_of(item_id) -> str | None:
        entry = paths.get(str(item_id))
        if entry is None:
            return None
        if entry["crate_id"] == 0:
            return crate
        return crates.get(entry["crate_id"])

    def foreign(name: str | None) -> bool:
        if name is None or name == crate:
            return False
        return name not in STANDARD and not name.startswith("faultline") and name not in allowed

    items: list[str] = []
    findings: list[str] = []
    seen: set[tuple[str, str]] = set()

    def types_in(node, where: str) -> None:
        if isinstance(node, dict):
            resolved = node.get("resolved_path")
            if isinstance(resolved, dict):
                owner = crate_of(resolved.get("id"))
                if foreign(owner):
                    findings.append(f"{crate}: {where}: {resolved.get('path')} (from `{owner}`)")
            for value in node.values():
                types_in(value, where)
        elif isinstance(node, list):
            for value in node:
                types_in(value, where)

    def visit(item_id, path: str) -> None:
        key = (str(item_id), path)
        if key in seen:
            return
        seen.add(key)
        item = index.get(str(item_id))
        if item is None:
            owner = crate_of(item_id)
            if foreign(owner):
                findings.append(f"{crate}: {path}: re-exports an item of `{owner}`")
            return
        kind, inner = next(iter(item["inner"].items()))
        name = item.get("name") or ""
        here = (f"{path}::{name}" if path else name) if name and kind != "use" else path
        if kind == "module":
            items.append(here)
            for child in inner["items"]:
                visit(child, here)
        elif kind == "use":
            target = inner.get("id")
            if target is None:
                return
            if inner.get("is_glob"):
                target_item = index.get(str(target))
                if target_item and "module" in target_item["inner"]:
                    for child in target_item["inner"]["module"]["items"]:
                        visit(child, path)
                    return
            visit(target, path)
        elif kind in ("struct", "enum", "union", "trait"):
            items.append(here)
            if kind == "struct":
                fields = inner["kind"]
                for field in fields.get("plain", {}).get("fields", []) if isinstance(fields, dict) else []:
                    visit(field, here)
                for field in fields.get("tuple", []) if isinstance(fields, dict) else []:
                    if field is not None:
                        visit(field, here)
            if kind == "enum":
                for variant in inner["variants"]:
                    visit(variant, here)
            if kind == "trait":
                for child in inner["items"]:
                    visit(child, here)
            types_in(inner.get("generics"), here)
            for impl_id in inner.get("impls", []):
                impl = index.get(str(impl_id))
                if impl is None:
                    continue
                body = impl["inner"]["impl"]
                if body.get("trait") is not None or body.get("is_synthetic") or body.get("blanket_impl"):
                    continue
                for child in body["items"]:
                    visit(child, here)
        elif kind == "variant":
            items.append(here)
            variant = inner["kind"]
            if isinstance(variant, dict):
                for field in variant.get("tuple", []) or []:
                    if field is not None:
                        visit(field, here)
                for field in variant.get("struct", {}).get("fields", []) or []:
                    visit(field, here)
        elif kind == "struct_field":
            items.append(here)
            types_in(inner, here)
        elif kind in ("function", "constant", "static", "type_alias", "assoc_const", "assoc_type"):
            items.append(here)
            types_in(inner, here)
        elif kind in ("macro", "proc_macro", "primitive", "trait_alias", "extern_crate"):
            items.append(here)

    visit(data["root"], "")
    return sorted(set(items)), findings


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    doc_dir = Path(argv[1])
    failed = False
    for spec in argv[2:]:
        crate, _, allow = spec.partition(":")
        allowed = {name for name in allow.split(",") if name}
        try:
            items, findings = scan(doc_dir, crate, allowed)
        except (OSError, ValueError, KeyError) as error:
            print(f"public-api: cannot read the rustdoc JSON of `{crate}`: {error}", file=sys.stderr)
            return 2
        print(f"{crate}: {len(items)} public items, {len(findings)} third-party types in public signatures")
        for finding in findings:
            print(f"  {finding}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
