#!/usr/bin/env python3
"""Lists stacksym's public API from rustdoc's JSON, one item per line, sorted.

    RUSTC_BOOTSTRAP=1 cargo rustdoc -p stacksym --lib -- -Z unstable-options --output-format json
    python3 .ci/public-api.py target/doc/stacksym.json > public-api.txt

`.ci/run` regenerates the list and fails when it differs from the committed `public-api.txt`,
so that every change to the public surface is seen in review: update the file in the same
commit (`.ci/public-api.py --update` runs both commands above; `--check` compares).

Every item reachable from the crate root is listed under each public path that names it
(re-exports included): modules, types with their public fields and variants, functions and
methods with their signatures, constants, traits with their items, and the traits each type
implements (auto traits and blanket impls left out). The rendering is rustdoc's JSON reduced to
Rust-like text; it is a review aid, not a compiler.
"""

import json
import subprocess
import sys
from pathlib import Path


def kind_of(item):
    inner = item.get("inner")
    if isinstance(inner, dict) and len(inner) == 1:
        return next(iter(inner))
    return "?"


def inner_of(item):
    return next(iter(item["inner"].values()))


class Lister:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc.get("paths", {})
        self.lines = set()
        self.seen_modules = set()

    def item(self, item_id):
        return self.index.get(str(item_id))

    # ---- types -----------------------------------------------------------------------------
    def ty(self, t):
        if t is None:
            return "()"
        if not isinstance(t, dict) or len(t) != 1:
            return json.dumps(t, sort_keys=True)
        (k, v), = t.items()
        if k == "primitive":
            return v
        if k == "generic":
            return v
        if k == "resolved_path":
            name = v.get("path") or v.get("name") or "?"
            return name + self.args(v.get("args"))
        if k == "borrowed_ref":
            life = v.get("lifetime")
            mut = v.get("is_mutable", v.get("mutable", False))
            return "&" + (life + " " if life else "") + ("mut " if mut else "") + self.ty(v["type"])
        if k == "raw_pointer":
            mut = v.get("is_mutable", v.get("mutable", False))
            return "*" + ("mut " if mut else "const ") + self.ty(v["type"])
        if k == "slice":
            return "[" + self.ty(v) + "]"
        if k == "array":
            return "[" + self.ty(v["type"]) + "; " + str(v["len"]) + "]"
        if k == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ")"
        if k == "impl_trait":
            return "impl " + " + ".join(self.bound(b) for b in v)
        if k == "dyn_trait":
            traits = [self.poly(p) for p in v.get("traits", [])]
            life = v.get("lifetime")
            return "dyn " + " + ".join(traits + ([life] if life else []))
        if k == "qualified_path":
            self_ty = self.ty(v.get("self_type"))
            trait = v.get("trait")
            trait_s = self.ty({"resolved_path": trait}) if trait else None
            name = v.get("name", "?")
            return f"<{self_ty} as {trait_s}>::{name}" if trait_s else f"{self_ty}::{name}"
        if k == "function_pointer":
            sig = v.get("sig") or v.get("decl") or {}
            return "fn" + self.sig(sig)
        return json.dumps(t, sort_keys=True)

    def poly(self, p):
        trait = p.get("trait", p)
        return self.ty({"resolved_path": trait})

    def bound(self, b):
        if isinstance(b, dict) and "trait_bound" in b:
            return self.poly(b["trait_bound"])
        if isinstance(b, dict) and "outlives" in b:
            return b["outlives"]
        return json.dumps(b, sort_keys=True)

    def args(self, a):
        if not a:
            return ""
        if "angle_bracketed" in a:
            ab = a["angle_bracketed"]
            parts = []
            for arg in ab.get("args", []):
                if "type" in arg:
                    parts.append(self.ty(arg["type"]))
                elif "lifetime" in arg:
                    parts.append(arg["lifetime"])
                elif "const" in arg:
                    parts.append(str(arg["const"].get("expr", "?")))
                else:
                    parts.append("_")
            for c in ab.get("constraints", ab.get("bindings", [])):
                binding = c.get("binding", {})
                if "equality" in binding:
                    eq = binding["equality"]
                    parts.append(c["name"] + " = " + self.ty(eq.get("type", eq)))
                else:
                    parts.append(c.get("name", "?"))
            return "<" + ", ".join(parts) + ">" if parts else ""
        if "parenthesized" in a:
            p = a["parenthesized"]
            out = "(" + ", ".join(self.ty(x) for x in p.get("inputs", [])) + ")"
            if p.get("output"):
                out += " -> " + self.ty(p["output"])
            return out
        return ""

    def generics(self, g):
        if not g:
            return ""
        params = []
        for p in g.get("params", []):
            kind = p.get("kind", {})
            if "lifetime" in kind:
                params.append(p["name"])
            elif "type" in kind:
                if kind["type"].get("is_synthetic", kind["type"].get("synthetic", False)):
                    continue
                bounds = kind["type"].get("bounds", [])
                params.append(p["name"] + (": " + " + ".join(self.bound(b) for b in bounds) if bounds else ""))
            elif "const" in kind:
                params.append("const " + p["name"] + ": " + self.ty(kind["const"].get("type")))
        return "<" + ", ".join(params) + ">" if params else ""

    def sig(self, sig):
        inputs = []
        for name, t in sig.get("inputs", []):
            if name == "self":
                rendered = self.ty(t)
                inputs.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, "self: " + rendered))
            else:
                inputs.append(f"{name}: {self.ty(t)}")
        out = "(" + ", ".join(inputs) + ")"
        if sig.get("output") is not None:
            out += " -> " + self.ty(sig["output"])
        return out

    def function(self, name, f):
        sig = f.get("sig") or f.get("decl") or {}
        header = f.get("header", {})
        prefix = ""
        if header.get("is_const", header.get("const", False)):
            prefix += "const "
        if header.get("is_unsafe", header.get("unsafe", False)):
            prefix += "unsafe "
        return f"{prefix}fn {name}{self.generics(f.get('generics'))}{self.sig(sig)}"

    # ---- items -----------------------------------------------------------------------------
    def add(self, line):
        self.lines.add(line)

    def module(self, path, item):
        key = (path, item["id"])
        if key in self.seen_modules:
            return
        self.seen_modules.add(key)
        self.add(f"pub mod {path}")
        for child_id in inner_of(item).get("items", []):
            child = self.item(child_id)
            if child is None or child.get("visibility") != "public":
                continue
            self.member(path, child)

    def member(self, path, item, name=None):
        kind = kind_of(item)
        name = name or item.get("name")
        if kind == "use":
            use = inner_of(item)
            target = self.item(use.get("id")) if use.get("id") is not None else None
            if use.get("is_glob", use.get("glob", False)):
                if target is not None and kind_of(target) == "module":
                    for child_id in inner_of(target).get("items", []):
                        child = self.item(child_id)
                        if child is not None and child.get("visibility") == "public":
                            self.member(path, child)
                return
            if target is None:
                self.add(f"pub use {path}::{use.get('name')} = {use.get('source')}")
                return
            self.member(path, target, use.get("name"))
            return
        full = f"{path}::{name}"
        if kind == "module":
            self.module(full, item)
        elif kind == "function":
            self.add(f"pub {self.function(full, inner_of(item))}")
        elif kind in ("constant", "static"):
            inner = inner_of(item)
            t = inner.get("type") or inner.get("const", {}).get("type")
            self.add(f"pub {'const' if kind == 'constant' else 'static'} {full}: {self.ty(t)}")
        elif kind == "type_alias":
            inner = inner_of(item)
            self.add(f"pub type {full}{self.generics(inner.get('generics'))} = {self.ty(inner.get('type'))}")
        elif kind == "struct":
            self.struct(full, item)
        elif kind == "enum":
            self.enum(full, item)
        elif kind == "trait":
            self.trait(full, item)
        elif kind == "macro":
            self.add(f"pub macro {full}!")
        else:
            self.add(f"pub {kind} {full}")

    def attrs_note(self, item):
        attrs = item.get("attrs", [])
        text = json.dumps(attrs)
        return " #[non_exhaustive]" if "non_exhaustive" in text else ""

    def struct(self, full, item):
        inner = inner_of(item)
        self.add(f"pub struct {full}{self.generics(inner.get('generics'))}{self.attrs_note(item)}")
        kind = inner.get("kind", {})
        fields = []
        if isinstance(kind, dict):
            if "plain" in kind:
                fields = kind["plain"].get("fields", [])
            elif "tuple" in kind:
                fields = [f for f in kind["tuple"] if f is not None]
        for i, field_id in enumerate(fields):
            field = self.item(field_id)
            if field is None or field.get("visibility") != "public":
                continue
            fname = field.get("name") or str(i)
            self.add(f"pub {full}::{fname}: {self.ty(inner_of(field))}")
        self.impls(full, inner.get("impls", []))

    def enum(self, full, item):
        inner = inner_of(item)
        self.add(f"pub enum {full}{self.generics(inner.get('generics'))}{self.attrs_note(item)}")
        for vid in inner.get("variants", []):
            variant = self.item(vid)
            if variant is None:
                continue
            vinner = inner_of(variant)
            vkind = vinner.get("kind", "plain")
            shape = ""
            if isinstance(vkind, dict) and "tuple" in vkind:
                tys = [self.ty(inner_of(self.item(f))) for f in vkind["tuple"] if f is not None and self.item(f)]
                shape = "(" + ", ".join(tys) + ")"
            elif isinstance(vkind, dict) and "struct" in vkind:
                parts = []
                for f in vkind["struct"].get("fields", []):
                    field = self.item(f)
                    if field:
                        parts.append(f"{field['name']}: {self.ty(inner_of(field))}")
                shape = " { " + ", ".join(parts) + " }"
            self.add(f"pub {full}::{variant['name']}{shape}{self.attrs_note(variant)}")
        self.impls(full, inner.get("impls", []))

    def trait(self, full, item):
        inner = inner_of(item)
        self.add(f"pub trait {full}{self.generics(inner.get('generics'))}")
        for mid in inner.get("items", []):
            member = self.item(mid)
            if member is None:
                continue
            kind = kind_of(member)
            if kind == "function":
                self.add(f"pub {full}::{self.function(member['name'], inner_of(member))}")
            elif kind == "assoc_const":
                self.add(f"pub {full}::const {member['name']}: {self.ty(inner_of(member).get('type'))}")
            elif kind == "assoc_type":
                self.add(f"pub {full}::type {member['name']}")

    def impls(self, full, impl_ids):
        for iid in impl_ids:
            impl = self.item(iid)
            if impl is None:
                continue
            inner = inner_of(impl)
            if inner.get("is_synthetic", inner.get("synthetic", False)) or inner.get("blanket_impl"):
                continue
            trait = inner.get("trait")
            if trait is not None:
                self.add(f"impl {self.ty({'resolved_path': trait})} for {full}")
                continue
            for mid in inner.get("items", []):
                member = self.item(mid)
                if member is None or member.get("visibility") != "public":
                    continue
                kind = kind_of(member)
                if kind == "function":
                    self.add(f"pub {self.function(full + '::' + member['name'], inner_of(member))}")
                elif kind == "assoc_const":
                    self.add(f"pub const {full}::{member['name']}: {self.ty(inner_of(member).get('type'))}")

    def run(self):
        root = self.item(self.doc["root"])
        self.module(root["name"], root)
        return sorted(self.lines)


def rustdoc_json(repo):
    """Runs rustdoc's JSON output on the library and returns the listed lines."""
    import os

    subprocess.run(
        # `-p`: the workspace's other default member (capi/) has its API in its C header.
        ["cargo", "rustdoc", "-p", "stacksym", "--lib", "--", "-Z", "unstable-options",
         "--output-format", "json"],
        cwd=repo,
        check=True,
        env={**os.environ, "RUSTC_BOOTSTRAP": "1"},
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR") or repo / "target")
    return Lister(json.loads((target / "doc/stacksym.json").read_text())).run()


def main():
    args = sys.argv[1:]
    repo = Path(__file__).resolve().parent.parent
    committed = repo / "public-api.txt"
    if args == ["--update"]:
        lines = rustdoc_json(repo)
        committed.write_text("\n".join(lines) + "\n")
        print(f"public-api.txt: {len(lines)} lines")
        return
    if args == ["--check"]:
        import difflib

        lines = [line + "\n" for line in rustdoc_json(repo)]
        old = committed.read_text().splitlines(keepends=True) if committed.exists() else []
        if lines != old:
            sys.stdout.writelines(
                difflib.unified_diff(old, lines, "public-api.txt (committed)", "the crate now")
            )
            sys.exit(
                "the public API differs from public-api.txt: if the change is meant, run "
                "`python3 .ci/public-api.py --update` and commit the file"
            )
        print(f"public API unchanged: {len(lines)} lines")
        return
    if len(args) != 1:
        sys.exit("usage: public-api.py RUSTDOC_JSON | --update | --check")
    for line in Lister(json.loads(Path(args[0]).read_text())).run():
        print(line)


if __name__ == "__main__":
    main()
