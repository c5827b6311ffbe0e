"""browserbay's own import-linter contract types (``[tool.importlinter]`` in pyproject.toml).

Dev only: ``lint-imports`` loads this module from the repository root (it puts the working
directory on ``sys.path``); no product package imports it.

- ``stdlib_only``: a closed layer. Every import a module of the layer makes — at module
  level, under ``TYPE_CHECKING`` or inside a function — lands in the standard library or in
  another module of the layer. The thin client's hot path is held to it: a warm ``bay``
  command costs a Python start plus one socket round trip, so neither a third-party package
  nor a module of ours outside the layer may be loaded there.
- ``acyclic``: no import cycle among the root packages' modules, counting every import. Each
  strongly connected component of the module graph is a cycle; the contract fails naming its
  imports. ``pending`` lists the cycles still being removed (exact module sets): a cycle not
  on the list fails, and so does a listed one that no longer exists, so the list only shrinks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Set

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain.imports import Module

#: Session options that would hide imports from the graph these contracts read.
_SESSION_REQUIRED = {"include_external_packages": True, "exclude_type_checking_imports": False}


def _session_flag(session_options: Mapping[str, object], name: str) -> bool:
    return str(session_options.get(name, False)).lower() == "true"


def _check_session(contract: Contract, needs: Iterable[str]) -> None:
    """Refuse to check on a graph that cannot see what the contract is about (a contract that
    sees no third-party import would pass vacuously; one that skips ``TYPE_CHECKING``
    imports would miss the cycles issue 16 is about)."""
    for name in needs:
        want = _SESSION_REQUIRED[name]
        if _session_flag(contract.session_options, name) != want:
            raise ValueError(
                f"contract {contract.name!r} needs {name} = {str(want).lower()}"
                " in the import-linter configuration"
            )


def _import_lines(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    lines = sorted(
        {d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)}
    )
    return ", ".join(f"l.{n}" for n in lines) or "l.?"


class StdlibOnlyContract(Contract):
    """The modules of ``modules`` import only the standard library and each other."""

    type_name = "stdlib_only"

    modules = fields.ListField(subfield=fields.ModuleField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(AlertLevel, default=AlertLevel.ERROR)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        _check_session(self, ["include_external_packages"])
        options = vars(self)  # the fields' parsed values (the class holds the Field objects)
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=options["ignore_imports"],
            unmatched_alerting=options["unmatched_ignore_imports_alerting"],
        )
        modules: list[Module] = options["modules"]
        layer = {module.name for module in modules}
        if missing := sorted(layer - graph.modules):
            raise ValueError(f"Module '{missing[0]}' does not exist.")
        stray: list[tuple[str, str, str]] = []
        for importer in sorted(layer):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported in layer:
                    continue
                if graph.is_module_squashed(imported) and imported in sys.stdlib_module_names:
                    continue
                stray.append((importer, imported, _import_lines(graph, importer, imported)))
        return ContractCheck(
            kept=not stray,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"stray": stray},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Imports outside the standard library and this layer:")
        output.new_line()
        for importer, imported, lines in check.metadata["stray"]:
            output.print_error(f"-   {importer} -> {imported} ({lines})", bold=False)
        output.new_line()


def strongly_connected(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The import cycles of ``graph``'s own modules (external packages left out): each
    strongly connected component of two or more modules, or one that imports itself.
    Tarjan's algorithm, iterative (the graph has hundreds of modules)."""
    nodes = sorted(m for m in graph.modules if not graph.is_module_squashed(m))
    own = set(nodes)
    edges = {
        m: sorted(own & graph.find_modules_directly_imported_by(m))
        for m in nodes  # an external is squashed: it imports nothing of ours
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges[succ])))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges[node]:
                        found.append(frozenset(component))
    return sorted(found, key=sorted)


def _parse_cycle(entry: str) -> frozenset[str]:
    return frozenset(name.strip() for name in entry.split(",") if name.strip())


def _imports_within(graph: grimp.ImportGraph, cycle: Set[str]) -> list[tuple[str, str, str]]:
    """Every import between two modules of ``cycle``: what to cut to break it."""
    return [
        (importer, imported, _import_lines(graph, importer, imported))
        for importer in sorted(cycle)
        for imported in sorted(cycle & graph.find_modules_directly_imported_by(importer))
    ]


def _show(cycle: Set[str]) -> str:
    return " ↔ ".join(sorted(cycle))


class AcyclicContract(Contract):
    """No import cycle among the root packages' modules but the ``pending`` ones."""

    type_name = "acyclic"

    #: Each entry one cycle still being removed: its modules, comma-separated.
    pending = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        _check_session(self, ["exclude_type_checking_imports"])
        entries: list[str] = vars(self)["pending"] or []  # the parsed field (see stdlib_only)
        pending = {_parse_cycle(entry) for entry in entries}
        cycles = strongly_connected(graph)
        new = [
            (_show(cycle), _imports_within(graph, cycle))
            for cycle in cycles
            if cycle not in pending
        ]
        gone = [_show(cycle) for cycle in sorted(pending - set(cycles), key=sorted)]
        output.verbose_print(verbose, f"{len(cycles)} import cycles, {len(pending)} pending.")
        return ContractCheck(kept=not new and not gone, metadata={"new": new, "gone": gone})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for shown, imports in check.metadata["new"]:
            output.print_error(f"Import cycle {shown}:")
            output.new_line()
            for importer, imported, lines in imports:
                output.print_error(f"-   {importer} -> {imported} ({lines})", bold=False)
            output.new_line()
        for shown in check.metadata["gone"]:
            output.print_error(
                f"Listed as pending but no longer a cycle (take it off the list): {shown}"
            )
            output.new_line()
