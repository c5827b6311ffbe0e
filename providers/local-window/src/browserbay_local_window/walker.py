"""The AT-SPI walker: a child process the keeper runs with Debian's ``/usr/bin/python3`` (where
``python3-pyatspi`` and its ``gir1.2-atspi-2.0`` typelib live). It speaks JSON lines: one
request object per line on stdin, one answer per line on stdout.

It talks D-Bus to the accessibility bus itself (Gio), pipelining calls so a walk costs about one
round trip per tree level instead of one per property, with a per-call timeout, a node budget
and a deadline. An application that stops answering costs one call timeout: its pending calls
are cancelled and what could not be read is reported as an unreadable subtree.

Standard library and PyGObject only: this file is not imported by the keeper.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from typing import Any

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, Gio, GLib  # noqa: E402

ACC = "org.a11y.atspi.Accessible"
PROPS = "org.freedesktop.DBus.Properties"
PREFIX = "org.a11y.atspi."
CACHE = "/org/a11y/atspi/cache"
NULL = "/org/a11y/atspi/null"
REGISTRY = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
INT_MIN = -(2**31)
MAX_INFLIGHT = 64
SHOWN_TEXT = 200

# Call arguments, built once (a GLib.Variant costs walker CPU per call).
ALL_ACC = GLib.Variant("(s)", (ACC,))
SCREEN_COORDS = GLib.Variant("(u)", (0,))
ALL_TEXT = GLib.Variant("(ii)", (0, -1))
INDEX = [GLib.Variant("(i)", (i,)) for i in range(8)]

ROLES = {int(r): Atspi.role_get_name(r) for r in Atspi.Role.__enum_values__.values()}
STATES = {int(s): s.value_nick for s in Atspi.StateType.__enum_values__.values()}


def _states(words: list[int]) -> list[str]:
    out = []
    for i, word in enumerate(words):
        for bit in range(32):
            if word & (1 << bit):
                out.append(STATES.get(i * 32 + bit, str(i * 32 + bit)))
    return out


def _is_timeout(err: GLib.Error) -> bool:
    return bool(
        err.matches(Gio.io_error_quark(), Gio.IOErrorEnum.TIMED_OUT)
        or "NoReply" in (err.message or "")
        or "Timeout" in (err.message or "")
    )


def _is_cancelled(err: GLib.Error) -> bool:
    return bool(err.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED))


class Node:
    __slots__ = (
        "actions",
        "bounds",
        "bus",
        "children",
        "depth",
        "detailed",
        "ifaces",
        "missing",
        "more",
        "name",
        "path",
        "role",
        "states",
        "unreadable",
        "value",
    )

    def __init__(self, bus: str, path: str, depth: int):
        self.bus, self.path, self.depth = bus, path, depth
        self.role = ""
        self.name = ""
        self.states: list[str] = []
        self.ifaces: list[str] = []
        self.actions: list[str] = []
        self.bounds: list[int] | None = None
        self.value: str | None = None
        self.children: list[Node] = []
        self.more = 0
        self.detailed = False
        self.missing: set[str] = set()
        self.unreadable: str | None = None

    def row(self) -> dict[str, Any]:
        return {
            "d": self.depth,
            "bus": self.bus,
            "path": self.path,
            "role": self.role,
            "name": self.name,
            "states": self.states,
            "ifaces": self.ifaces,
            "actions": self.actions,
            "bounds": self.bounds,
            "value": self.value,
            "more": self.more,
            "unreadable": self.unreadable,
        }


class Walk:
    """One pipelined breadth-first walk over one or more applications."""

    def __init__(self, conns: Any, budget: int, deadline_ms: int, call_ms: int):
        self.conns = conns
        self.budget = budget
        self.call_ms = call_ms
        self.deadline_ms = deadline_ms
        self.loop = GLib.MainLoop()
        self.queue: deque[tuple[Node, str, str, GLib.Variant | None, Any]] = deque()
        self.inflight = 0
        self.count = 0
        self.calls = 0
        self.by_method: dict[str, int] = {}
        self.cancels: dict[str, Gio.Cancellable] = {}
        self.hung: dict[str, str] = {}
        self.expired = False

    # -- engine ---------------------------------------------------------------------------

    def call(
        self,
        node: Node,
        iface: str,
        method: str,
        args: GLib.Variant | None,
        done: Any,
        *,
        path: str | None = None,
        failed: Any = None,
        key: str | None = None,
    ) -> None:
        tag = key or method
        node.missing.add(tag)
        self.queue.append((node, iface, method, args, (done, path, failed, tag)))

    def pump(self) -> None:
        while self.queue and self.inflight < MAX_INFLIGHT and not self.expired:
            node, iface, method, args, (done, path, failed, tag) = self.queue.popleft()
            if node.bus in self.hung:
                continue
            cancel = self.cancels.setdefault(node.bus, Gio.Cancellable())
            self.inflight += 1
            self.calls += 1
            self.by_method[method] = self.by_method.get(method, 0) + 1
            conn, dest = self.conns(node.bus)
            conn.call(
                dest,
                path or node.path,
                iface,
                method,
                args,
                None,
                Gio.DBusCallFlags.NO_AUTO_START,
                self.call_ms,
                cancel,
                self._finished,
                (node, tag, done, failed),
            )
        if self.inflight == 0 and (not self.queue or self.expired):
            self.loop.quit()

    def _finished(self, conn: Gio.DBusConnection, result: Gio.AsyncResult, data: Any) -> None:
        node, method, done, failed = data
        self.inflight -= 1
        try:
            reply = conn.call_finish(result)
        except GLib.Error as err:
            if failed is not None and not _is_timeout(err) and not _is_cancelled(err):
                node.missing.discard(method)
                failed(node, err)
            elif _is_timeout(err) and node.bus not in self.hung:
                self.hung[node.bus] = self.hang_reason()
                self.cancels[node.bus].cancel()
            elif not _is_cancelled(err) and not node.unreadable:
                node.unreadable = (err.message or "error").split(": ")[-1][:160]
        else:
            node.missing.discard(method)
            try:
                done(node, reply)
            except Exception as exc:  # a reply of an unexpected shape
                node.unreadable = f"unexpected reply to {method}: {exc!r}"[:160]
        self.pump()

    def hang_reason(self) -> str:
        return (
            f"the application did not answer within {self.call_ms} ms (it may be busy, "
            "stopped or hung)"
        )

    def _expire(self) -> bool:
        self.expired = True
        for cancel in self.cancels.values():
            cancel.cancel()
        if self.inflight == 0:
            self.loop.quit()
        return False

    def run(self, roots: list[Node]) -> None:
        for root in roots:
            self.start(root)
        timer = GLib.timeout_add(max(1, self.deadline_ms), self._expire)
        self.pump()
        if self.inflight or self.queue:
            self.loop.run()
        if not self.expired:
            GLib.source_remove(timer)

    # -- what one node costs ------------------------------------------------------------

    def start(self, root: Node) -> None:
        """An application: all of its tree in one call where it keeps a cache (GTK, Qt),
        else breadth first, node by node."""
        self.count += 1
        self.call(
            root, PREFIX + "Cache", "GetItems", None, self._items, path=CACHE, failed=self._nocache
        )

    def _nocache(self, root: Node, _err: GLib.Error) -> None:
        self.count -= 1
        self.visit(root)

    def _items(self, root: Node, reply: GLib.Variant) -> None:
        value = reply.unpack()
        items: dict[str, Any] = {}
        children: dict[str, list[tuple[int, str]]] = {}
        for obj, _app, parent, index, count, ifaces, name, role, _desc, states in value[0]:
            items[obj[1]] = (count, ifaces, name, role, states)
            if parent[0] == root.bus and obj[1] != root.path:
                children.setdefault(parent[1], []).append((index, obj[1]))
        if root.path not in items:
            self._nocache(root, GLib.Error("no root in the cache"))
            return
        self._fill(root, items[root.path])
        level = [root]
        while level:
            following = []
            for node in level:
                known = [p for _i, p in sorted(children.get(node.path, ()))]
                expected = items[node.path][0]
                if expected > len(known):
                    # The cache lacks some children: ask the node itself.
                    self.call(node, ACC, "GetChildren", None, self._children)
                    continue
                for path in known:
                    if self.count >= self.budget:
                        node.more += 1
                        continue
                    self.count += 1
                    child = Node(node.bus, path, node.depth + 1)
                    node.children.append(child)
                    self._fill(child, items[path])
                    following.append(child)
            level = following

    def _fill(self, node: Node, item: Any) -> None:
        _count, ifaces, name, role, states = item
        node.role = ROLES.get(int(role), f"role {role}")
        node.name = str(name or "")
        node.states = _states(list(states))
        self._set_ifaces(node, ifaces)

    def visit(self, node: Node) -> None:
        self.count += 1
        self.call(node, PROPS, "GetAll", ALL_ACC, self._props)
        self.call(node, ACC, "GetRole", None, self._role)
        self.call(node, ACC, "GetState", None, self._state)
        self.call(node, ACC, "GetInterfaces", None, self._ifaces)

    # Replies are read with get_child_value/lookup_value, not unpack(): unpacking a GetAll
    # (with its attribute dict) costs more walker CPU than the call itself.

    def _props(self, node: Node, reply: GLib.Variant) -> None:
        props = reply.get_child_value(0)
        name = props.lookup_value("Name", None)
        node.name = name.get_string() if name is not None else ""
        count = props.lookup_value("ChildCount", None)
        if count is None or count.get_int32() > 0:
            self.call(node, ACC, "GetChildren", None, self._children)

    @staticmethod
    def _role(node: Node, reply: GLib.Variant) -> None:
        role = reply.get_child_value(0).get_uint32()
        node.role = ROLES.get(role, f"role {role}")

    def _state(self, node: Node, reply: GLib.Variant) -> None:
        node.states = _states(list(reply.get_child_value(0).unpack()))
        self._maybe_text(node)

    def _maybe_text(self, node: Node) -> None:
        """What needs both the states and the interfaces, asked once both are known: the
        bounds of a node that is showing (a hidden node's are meaningless: skipping them
        saves a call per node on long pages), and the value of a text field — one with
        EditableText, or (Chromium's web fields, which lack it) Text and the editable state."""
        if node.detailed or "GetState" in node.missing or "GetInterfaces" in node.missing:
            return
        node.detailed = True
        if "Component" in node.ifaces and ("showing" in node.states or not node.states):
            self.call(node, PREFIX + "Component", "GetExtents", SCREEN_COORDS, self._bounds)
        if "Text" in node.ifaces and ("EditableText" in node.ifaces or "editable" in node.states):
            self.call(node, PREFIX + "Text", "GetText", ALL_TEXT, self._text)

    def _ifaces(self, node: Node, reply: GLib.Variant) -> None:
        self._set_ifaces(node, reply.get_child_value(0).get_strv())

    def _set_ifaces(self, node: Node, ifaces: list[str]) -> None:
        node.ifaces = [i.removeprefix(PREFIX) for i in ifaces]
        if "Action" in node.ifaces:
            self.call(node, PREFIX + "Action", "GetActions", None, self._actions)
        self._maybe_text(node)

    @staticmethod
    def _bounds(node: Node, reply: GLib.Variant) -> None:
        x, y, w, h = reply.get_child_value(0).unpack()
        node.bounds = None if x == INT_MIN or y == INT_MIN else [x, y, w, h]

    def _actions(self, node: Node, reply: GLib.Variant) -> None:
        node.actions = [str(a[0]).lower() for a in reply.get_child_value(0).unpack()]
        for i, name in enumerate(node.actions):
            if not name:  # Chromium leaves the list's names empty: ask one by one

                def named(node: Node, reply: GLib.Variant, i: int = i) -> None:
                    node.actions[i] = reply.get_child_value(0).get_string()

                self.call(
                    node,
                    PREFIX + "Action",
                    "GetName",
                    INDEX[i] if i < len(INDEX) else GLib.Variant("(i)", (i,)),
                    named,
                    key=f"GetName{i}",
                )

    @staticmethod
    def _text(node: Node, reply: GLib.Variant) -> None:
        text = reply.get_child_value(0).get_string()
        node.value = text if len(text) <= SHOWN_TEXT else text[:SHOWN_TEXT] + "…"

    def _children(self, node: Node, reply: GLib.Variant) -> None:
        for bus, path in reply.get_child_value(0).unpack():
            if path == NULL:
                continue
            if self.count >= self.budget:
                node.more += 1
                continue
            child = Node(bus, path, node.depth + 1)
            node.children.append(child)
            self.visit(child)

    # -- the answer ---------------------------------------------------------------------

    def finish(self, node: Node, out: list[dict[str, Any]]) -> None:
        if node.missing and not node.unreadable:
            if node.bus in self.hung:
                node.unreadable = self.hung[node.bus]
            elif self.expired:
                node.unreadable = "the walk reached its deadline before this part answered"
            else:
                node.unreadable = "no answer"
        if node.unreadable and not node.role:
            node.role = "unreadable subtree"
        if node.role == "password text":
            node.value = None  # a password never leaves the application
        out.append(node.row())
        for child in node.children:
            self.finish(child, out)


def _wait_for_owner(session: Gio.DBusConnection, name: str, seconds: float) -> None:
    """A display that just started: give its bus launcher a moment to take its name, rather
    than have D-Bus activate a second one."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        owned = session.call_sync(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "NameHasOwner",
            GLib.Variant("(s)", (name,)),
            GLib.VariantType("(b)"),
            Gio.DBusCallFlags.NONE,
            1000,
            None,
        ).unpack()[0]
        if owned:
            return
        time.sleep(0.02)


class Walker:
    def __init__(self) -> None:
        self.conn: Gio.DBusConnection | None = None
        self.address = ""
        self.direct: dict[str, Gio.DBusConnection | None] = {}

    def bus(self) -> Gio.DBusConnection:
        if self.conn is not None and not self.conn.is_closed():
            return self.conn
        address = os.environ.get("AT_SPI_BUS_ADDRESS", "")
        if not address and not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            # Never let D-Bus autolaunch a bus of its own on somebody's display.
            raise GLib.Error("no_bus: no DBUS_SESSION_BUS_ADDRESS and no AT_SPI_BUS_ADDRESS")
        if not address:
            session = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            _wait_for_owner(session, "org.a11y.Bus", 3.0)
            reply = session.call_sync(
                "org.a11y.Bus",
                "/org/a11y/bus",
                "org.a11y.Bus",
                "GetAddress",
                None,
                GLib.VariantType("(s)"),
                Gio.DBusCallFlags.NONE,
                3000,
                None,
            )
            address = reply.unpack()[0]
        flags = (
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
            | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        )
        self.conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        self.address = address
        return self.conn

    def connect_app(self, bus: str, ms: int) -> None:
        """A peer-to-peer connection to the application where it offers one (at-spi2-atk
        does: about 1.6 times the calls per second of going through the bus daemon). Raises
        the timeout of an application that does not answer."""
        if bus in self.direct:
            return
        conn = None
        try:
            address = self._sync(
                bus,
                "/org/a11y/atspi/accessible/root",
                PREFIX + "Application",
                "GetApplicationBusAddress",
                None,
                ms,
            )[0]
            if address:
                conn = Gio.DBusConnection.new_for_address_sync(
                    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT, None, None
                )
        except GLib.Error as err:
            if _is_timeout(err):
                raise
            conn = None
        self.direct[bus] = conn

    def route(self, bus: str) -> tuple[Gio.DBusConnection, str | None]:
        conn = self.direct.get(bus)
        if conn is None or conn.is_closed():
            return self.bus(), bus
        return conn, None

    def _sync(self, bus: str, path: str, iface: str, method: str, args: Any, ms: int) -> Any:
        return (
            self.bus()
            .call_sync(
                bus, path, iface, method, args, None, Gio.DBusCallFlags.NO_AUTO_START, ms, None
            )
            .unpack()
        )

    def apps(self, ms: int) -> list[dict[str, Any]]:
        children = self._sync(*REGISTRY, ACC, "GetChildren", None, ms)[0]
        out = []
        for bus, path in children:
            try:
                pid = self._sync(
                    "org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus",
                    "GetConnectionUnixProcessID",
                    GLib.Variant("(s)", (bus,)),
                    ms,
                )[0]
            except GLib.Error:
                pid = None
            out.append({"bus": bus, "path": path, "pid": pid})
        return out

    # -- ops ------------------------------------------------------------------------------

    def op_hello(self, req: dict[str, Any]) -> dict[str, Any]:
        apps = self.apps(int(req.get("call_ms", 2000)))
        return {"a11y_bus": self.address, "apps": len(apps), "pid": os.getpid()}

    def op_apps(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"apps": self.apps(int(req.get("call_ms", 2000)))}

    def op_snapshot(self, req: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        cpu = time.process_time()
        call_ms = int(req.get("call_ms", 1000))
        pids = {int(p) for p in req.get("pids", [])}
        apps = [a for a in self.apps(call_ms) if a["pid"] in pids]
        walk = Walk(self.route, int(req.get("budget", 4000)), int(req["deadline_ms"]), call_ms)
        for app in apps:
            try:
                self.connect_app(app["bus"], call_ms)
            except GLib.Error:
                walk.hung[app["bus"]] = walk.hang_reason()
        roots = [Node(a["bus"], a["path"], 0) for a in apps]
        walk.run(roots)
        nodes: list[dict[str, Any]] = []
        for root in roots:
            walk.finish(root, nodes)
        return {
            "nodes": nodes,
            "apps": [{"bus": a["bus"], "pid": a["pid"]} for a in apps],
            "walked": walk.count,
            "calls": walk.calls,
            "calls_by_method": walk.by_method,
            "budget_hit": any(n["more"] for n in nodes),
            "hung": sorted(walk.hung),
            "expired": walk.expired,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            "walker_cpu_ms": round((time.process_time() - cpu) * 1000, 1),
        }

    def _node_ms(self, req: dict[str, Any]) -> tuple[str, str, int]:
        return str(req["bus"]), str(req["path"]), int(req.get("call_ms", 2000))

    def op_node(self, req: dict[str, Any]) -> dict[str, Any]:
        """One node as it is now: what a refusal's probe result shows."""
        bus, path, ms = self._node_ms(req)
        role = self._sync(bus, path, ACC, "GetRole", None, ms)[0]
        # GetAll, as the walk does: Chromium answers Get(Name) of a link with "".
        props = self._sync(bus, path, PROPS, "GetAll", GLib.Variant("(s)", (ACC,)), ms)[0]
        name = props.get("Name")
        states = _states(list(self._sync(bus, path, ACC, "GetState", None, ms)[0]))
        ifaces = [
            i.removeprefix(PREFIX) for i in self._sync(bus, path, ACC, "GetInterfaces", None, ms)[0]
        ]
        actions: list[str] = []
        if "Action" in ifaces:
            raw = self._sync(bus, path, PREFIX + "Action", "GetActions", None, ms)[0]
            actions = [str(a[0]).lower() for a in raw]
            for i, action in enumerate(actions):
                if not action:
                    args = GLib.Variant("(i)", (i,))
                    actions[i] = str(
                        self._sync(bus, path, PREFIX + "Action", "GetName", args, ms)[0]
                    )
        bounds = None
        if "Component" in ifaces:
            x, y, w, h = self._sync(
                bus, path, PREFIX + "Component", "GetExtents", GLib.Variant("(u)", (0,)), ms
            )[0]
            bounds = None if x == INT_MIN or y == INT_MIN else [x, y, w, h]
        return {
            "role": ROLES.get(int(role), f"role {role}"),
            "name": str(name or ""),
            "states": states,
            "interfaces": ifaces,
            "actions": actions,
            "bounds": bounds,
        }

    def op_do_action(self, req: dict[str, Any]) -> dict[str, Any]:
        bus, path, ms = self._node_ms(req)
        index = int(req.get("index", 0))
        done = self._sync(
            bus, path, PREFIX + "Action", "DoAction", GLib.Variant("(i)", (index,)), ms
        )
        return {"done": bool(done[0])}

    def op_insert_text(self, req: dict[str, Any]) -> dict[str, Any]:
        bus, path, ms = self._node_ms(req)
        text = str(req["text"])
        count = self._sync(
            bus, path, PROPS, "Get", GLib.Variant("(ss)", (PREFIX + "Text", "CharacterCount")), ms
        )[0]
        done = self._sync(
            bus,
            path,
            PREFIX + "EditableText",
            "InsertText",
            # ATK takes the length in bytes of UTF-8 (a character count cuts "Zoë" to "Zo").
            GLib.Variant("(isi)", (int(count), text, len(text.encode("utf-8")))),
            ms,
        )
        return {"done": bool(done[0])}

    def op_grab_focus(self, req: dict[str, Any]) -> dict[str, Any]:
        bus, path, ms = self._node_ms(req)
        done = self._sync(bus, path, PREFIX + "Component", "GrabFocus", None, ms)
        return {"done": bool(done[0])}

    def op_text(self, req: dict[str, Any]) -> dict[str, Any]:
        bus, path, ms = self._node_ms(req)
        text = self._sync(bus, path, PREFIX + "Text", "GetText", GLib.Variant("(ii)", (0, -1)), ms)
        return {"text": str(text[0])}


def answer(walker: Walker, req: dict[str, Any]) -> dict[str, Any]:
    op = req.get("op")
    fn = getattr(walker, f"op_{op}", None)
    if fn is None:
        return {"ok": False, "kind": "usage", "error": f"unknown op {op!r}"}
    try:
        return {"ok": True, **fn(req)}
    except GLib.Error as err:
        message = err.message or str(err)
        if _is_timeout(err):
            kind = "timeout"
        elif (
            "UnknownObject" in message or "UnknownMethod" in message or "ServiceUnknown" in message
        ):
            kind = "gone"
        elif "org.a11y.Bus" in message or "DBUS_SESSION_BUS_ADDRESS" in message:
            kind = "no_bus"
        else:
            kind = "dbus"
        return {"ok": False, "kind": kind, "error": message[:300]}
    except (KeyError, ValueError, TypeError) as exc:
        return {"ok": False, "kind": "usage", "error": repr(exc)[:300]}


def main() -> None:
    walker = Walker()
    out = sys.stdout
    out.write(json.dumps({"ok": True, "ready": True, "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as exc:
            reply: dict[str, Any] = {"ok": False, "kind": "usage", "error": repr(exc)}
        else:
            reply = answer(walker, req)
            reply["id"] = req.get("id")
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
