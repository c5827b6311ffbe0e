"""The scripted MiniWoB++ agent: one adapter interface, one agent per task, both tools alike.

An agent reads what an agent would read (the task's utterance through ``get text #query``, the
page through ``snapshot`` / ``snapshot -i``), finds refs in that text, and issues verbs. It is
written once against :class:`Tool`; each tool's adapter only spells commands and reads its own
output formats (a box, an eval result). No step solves a task by DOM script: the only ``eval``
calls are the harness's own (seeding an episode, reading its reward), which are not counted.

A verb a tool does not have raises :class:`Unsupported` (the episode fails for that tool, with
the reason recorded); a command that exits non-zero raises :class:`StepFailed`.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# -- what one command cost -----------------------------------------------------------------------


@dataclass
class Call:
    argv: list[str]
    out: str
    err: str
    rc: int
    secs: float
    cpu: float  # seconds of CPU the command's own process used (user + system)

    @property
    def chars(self) -> int:
        return len(self.out) + len(self.err)


class StepFailed(Exception):
    """A command the agent issued exited non-zero (its own words are kept)."""


class Unsupported(Exception):
    """The tool has no verb for what this step needs."""


class TaskGaveUp(Exception):
    """The agent did not find what it needed in what it read (a missing ref, an odd utterance)."""


# -- the adapter ---------------------------------------------------------------------------------


class Tool:
    """One browser tool driven through its CLI. Subclasses spell commands; nothing else."""

    name = "?"

    def __init__(self, exe: Path, env: dict[str, str]):
        self.exe, self.env = exe, env

    def execute(self, args: list[str], timeout: float) -> Call:
        argv = [str(self.exe), *args]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        try:
            cp = subprocess.run(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            out, err, rc = cp.stdout, cp.stderr, cp.returncode
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            err += f"\n[harness: killed after {timeout:.0f}s]"
            rc = 124
        secs = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        return Call(argv, out, err, rc, secs, cpu)

    # The agent's commands: the same words for both tools unless a method below says otherwise.
    def spell(self, verb: str, *args: str) -> list[str]:
        return [verb, *args]

    def parse_box(self, out: str) -> tuple[float, float, float, float]:
        nums = re.findall(r"-?\d+(?:\.\d+)?", out)
        if len(nums) < 4:
            raise TaskGaveUp(f"no box in {out[:120]!r}")
        x, y, w, h = (float(n) for n in nums[:4])
        return x, y, w, h

    def parse_eval(self, out: str) -> object:
        value: object = out.strip()
        for _ in range(2):  # agent-browser prints a JSON string of the JSON we returned
            if not isinstance(value, str):
                break
            try:
                value = json.loads(value)
            except ValueError:
                break
        return value


class BayTool(Tool):
    name = "bay"


class AgentBrowserTool(Tool):
    name = "agent-browser"


# -- reading a snapshot --------------------------------------------------------------------------

_HEAD = re.compile(
    r"""^(?P<indent>\s*)(?P<dash>-\s+)?'?(?P<role>[A-Za-z]+)(?:\s+"(?P<name>(?:[^"\\]|\\.)*)")?"""
)
# agent-browser's ``[ref=e5]`` / ``[level=1, ref=e5]``, bay's ``@e5``.
_REF = re.compile(r"(?:[\[,\s]ref=|\s@)(?P<ref>(?:f\d+)?[ec]\d+)(?:[\],]|\b)")


@dataclass
class Node:
    role: str
    name: str
    text: str
    ref: str | None
    depth: int
    children: list[Node] = field(default_factory=list)

    def all_text(self) -> str:
        parts = [p for p in (self.name, self.text) if p]
        parts += [c.all_text() for c in self.children]
        return " ".join(p for p in parts if p).strip()

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out += c.walk()
        return out


def _unquote(s: str) -> str:
    s = s.strip().rstrip("'")
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s.replace('\\"', '"')


def parse_snapshot(text: str) -> list[Node]:
    """Both tools print an indented YAML-ish tree: ``- role "name" [attrs] [ref=eN]: text``
    (bay writes the ref ``@eN``, and its interactive list has no ``- ``)."""
    roots: list[Node] = []
    stack: list[Node] = []
    for line in text.splitlines():
        m = _HEAD.match(line)
        if not m:
            continue
        rest = line[m.end() :]
        attrs, _, tail = rest.partition(": ")
        ref = _REF.search(attrs)
        if not m.group("dash") and not ref:
            continue  # bay's interactive list has no dash: a line without one is a node's
            # only when it shows a ref (not a note such as "no change since …")
        node = Node(
            role=m.group("role"),
            name=_unquote(m.group("name") or "").replace("\\", ""),
            text=_unquote(tail),
            ref=ref.group("ref") if ref else None,
            depth=len(m.group("indent")),
        )
        while stack and stack[-1].depth >= node.depth:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


# -- the agent -----------------------------------------------------------------------------------


class Agent:
    """What the scripted agent can do; every method is one counted command of ``tool``."""

    def __init__(self, tool: Tool, timeout: float):
        self.tool, self.timeout = tool, timeout
        self.calls: list[Call] = []
        self.evals = 0

    def run(self, verb: str, *args: str) -> str:
        call = self.tool.execute(self.tool.spell(verb, *args), self.timeout)
        self.calls.append(call)
        if call.rc != 0:
            said = (call.err.strip() or call.out.strip()).splitlines()
            raise StepFailed(
                f"{verb} {' '.join(args)[:60]} → rc {call.rc}: {' / '.join(said)[:200]}"
            )
        return call.out

    # reading
    def utterance(self) -> str:
        return " ".join(self.run("get", "text", "#query").split())

    def snapshot(self, interactive: bool = True) -> list[Node]:
        out = self.run("snapshot", "-i") if interactive else self.run("snapshot")
        nodes: list[Node] = []
        for root in parse_snapshot(out):
            nodes += root.walk()
        return nodes

    def text(self, target: str) -> str:
        return self.run("get", "text", target).strip()

    def value(self, target: str) -> str:
        return self.run("get", "value", target).rstrip("\n")

    def count(self, selector: str) -> int:
        return int(self.run("get", "count", selector).split()[0])

    def wait(self, target: str) -> None:
        self.run("wait", target)

    def box(self, target: str) -> tuple[float, float, float, float]:
        return self.tool.parse_box(self.run("get", "box", target))

    # acting
    def click(self, target: str) -> None:
        self.run("click", target)

    def dblclick(self, target: str) -> None:
        self.run("dblclick", target)

    def fill(self, target: str, text: str) -> None:
        self.run("fill", target, text)

    def type(self, target: str, text: str) -> None:
        self.run("type", target, text)

    def focus(self, target: str) -> None:
        self.run("focus", target)

    def press(self, key: str) -> None:
        self.run("press", key)

    def keyboard(self, action: str, text: str) -> None:
        self.run("keyboard", action, text)

    def hover(self, target: str) -> None:
        self.run("hover", target)

    def drag(self, source: str, target: str) -> None:
        self.run("drag", source, target)

    def mouse(self, action: str, *args: float | str) -> None:
        self.run("mouse", action, *(f"{a:.0f}" if isinstance(a, float) else str(a) for a in args))

    def select(self, target: str, *values: str) -> None:
        self.run("select", target, *values)


def find(
    nodes: list[Node],
    role: str | None = None,
    name: str | Callable[[str], bool] | None = None,
    need_ref: bool = True,
) -> Node:
    for n in nodes:
        if role is not None and n.role != role:
            continue
        label = n.name or n.text
        if isinstance(name, str) and label != name:
            continue
        if callable(name) and not name(label):
            continue
        if need_ref and n.ref is None:
            continue
        return n
    raise TaskGaveUp(
        f"no {role or 'node'} named {name if isinstance(name, str) else '…'} with a ref"
    )


def ref(node: Node) -> str:
    assert node.ref is not None
    return "@" + node.ref


def quoted(utterance: str) -> list[str]:
    return re.findall(r'"([^"]*)"', utterance)


def list_items(nodes: list[Node]) -> list[str]:
    return [n.all_text() for n in nodes if n.role == "listitem"]


def _submit(a: Agent, nodes: list[Node] | None = None, name: str = "Submit") -> None:
    a.click(ref(find(nodes if nodes is not None else a.snapshot(), "button", name)))


# -- the tasks -----------------------------------------------------------------------------------

TaskFn = Callable[[Agent], None]
TASKS: dict[str, tuple[str, TaskFn]] = {}  # name -> (set, agent)


def task(set_name: str, *names: str) -> Callable[[TaskFn], TaskFn]:
    def deco(fn: TaskFn) -> TaskFn:
        for n in names:
            TASKS[n] = (set_name, fn)
        return fn

    return deco


# hand: the tasks that need issue 18's verbs (drag, mouse, chords, keyboard, dblclick, focus)


@task("hand", "click-dialog", "click-dialog-2")
def click_dialog(a: Agent) -> None:
    want = quoted(a.utterance())[-1]
    nodes = a.snapshot()
    a.click(ref(find(nodes, "button", "Close" if want == "x" else want)))


def _sortable_move(a: Agent, src: int, dst: int, n: int) -> None:
    """Move item ``src`` to position ``dst`` (1-based) of a jQuery UI sortable list: dropped on
    an item's centre it lands at that item's place going up and just above it going down; the
    last place has no item below it, so that move is a pointer path (mouse down/move/up)."""
    item = "#sortable li:nth-child({})".format
    if src == dst:
        return
    if dst < src or dst < n:
        a.drag(item(src), item(dst if dst < src else dst + 1))
        return
    x, y, w, h = a.box(item(src))
    _, ly, _, lh = a.box(item(n))
    a.mouse("move", x + w / 2, y + h / 2)
    a.mouse("down")
    for step in (0.3, 0.7, 1.0):
        a.mouse("move", x + w / 2, y + h / 2 + (ly + lh + 4 - y - h / 2) * step)
    a.mouse("up")


@task("hand", "drag-items")
def drag_items(a: Agent) -> None:
    u = a.utterance()
    m = re.match(
        r"Drag (.+?) (to the top|to the bottom|down by one position|up by one position|"
        r"to the (\d+)\w\w position)\.",
        u,
    )
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    items = list_items(a.snapshot(interactive=False))
    n = len(items)
    src = items.index(m.group(1)) + 1
    how = m.group(2)
    dst = {
        "to the top": 1,
        "to the bottom": n,
        "down by one position": src + 1,
        "up by one position": src - 1,
    }.get(how) or int(m.group(3))
    _sortable_move(a, src, dst, n)


@task("hand", "drag-sort-numbers")
def drag_sort_numbers(a: Agent) -> None:
    a.utterance()
    nodes = a.snapshot(interactive=False)
    nums = [int(t) for t in list_items(nodes)]
    n = len(nums)
    for i in range(n):
        j = min(range(i, n), key=lambda k: nums[k])
        if j != i:
            _sortable_move(a, j + 1, i + 1, n)
            nums.insert(i, nums.pop(j))
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "use-autocomplete", "use-autocomplete-nodelay")
def use_autocomplete(a: Agent) -> None:
    q = quoted(a.utterance())
    start, end = q[0], (q[1] if len(q) > 1 else "")
    box = find(a.snapshot(), "textbox")
    a.type(ref(box), start)
    a.wait(".ui-menu-item")  # the suggestions come after the widget's own delay
    nodes = a.snapshot()
    options = [
        n
        for n in nodes
        if n.ref
        and n.role != "textbox"
        and (n.name or n.text).startswith(start)
        and (n.name or n.text).endswith(end)
    ]
    if not options:
        raise TaskGaveUp(f"no suggestion starting {start!r} ending {end!r} got a ref")
    a.click(ref(options[-1]))
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "drag-box")
def drag_box(a: Agent) -> None:
    a.utterance()
    a.drag("#draggableSmall", "#draggableLarge")
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "use-slider")
def use_slider(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"Select (-?\d+) with the slider", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    want = int(m.group(1))
    nodes = a.snapshot()
    handle = find(nodes, "slider", None) if any(n.role == "slider" for n in nodes) else None
    target = ref(handle) if handle else ".ui-slider-handle"
    a.click(target)  # focus the handle
    a.press("Home")
    low = int(a.text("#val"))
    a.press("End")
    high = int(a.text("#val"))
    # Point at the value on the track (a press there moves the handle), then mend the
    # rounding with one arrow key a step.
    x, y, w, h = a.box("#slider")
    frac = (want - low) / (high - low) if high > low else 0.0
    px, py = (x + w * frac, y + h / 2) if w >= h else (x + w / 2, y + h * (1 - frac))
    a.mouse("move", px, py)
    a.mouse("down")
    a.mouse("up")
    for _ in range(6):
        got = int(a.text("#val"))
        if got == want:
            break
        a.press("ArrowRight" if got < want else "ArrowLeft")
    else:
        raise TaskGaveUp("the slider did not reach the value")
    _submit(a)


def _select_by_pointer(a: Agent, target: str) -> None:
    """Select an element's text with the mouse: press at its top-left, release at its
    bottom-right (through its middle, as a hand would)."""
    x, y, w, h = a.box(target)
    a.mouse("move", x + 1, y + 2)
    a.mouse("down")
    a.mouse("move", x + w / 2, y + h / 2)
    a.mouse("move", x + w - 1, y + h - 2)
    a.mouse("up")


@task("hand", "highlight-text")
def highlight_text(a: Agent) -> None:
    a.utterance()
    _select_by_pointer(a, "#randomText")
    _submit(a)


@task("hand", "highlight-text-2")
def highlight_text_2(a: Agent) -> None:
    m = re.search(r"the (\d)\w\w paragraph", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    _select_by_pointer(a, f"#randomText p:nth-of-type({m.group(1)})")
    _submit(a)


@task("hand", "click-menu")
def click_menu(a: Agent) -> None:
    m = re.match(r"Select (.+)$", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    path = m.group(1).split(">")
    nodes = a.snapshot()
    for i, label in enumerate(path):
        item = find(nodes, "menuitem", label)
        if i == len(path) - 1:
            a.click(ref(item))
        else:
            a.hover(ref(item))
            a.wait("400")  # jQuery UI opens a submenu 300 ms after the pointer came
            nodes = a.snapshot()


@task("hand", "copy-paste")
def copy_paste(a: Agent) -> None:
    a.utterance()
    nodes = a.snapshot()
    boxes = [n for n in nodes if n.role == "textbox"]
    if len(boxes) < 2:
        raise TaskGaveUp("two text boxes expected (the textarea and the answer)")
    # Which is the textarea: the snapshot names neither, so ask the page's own field (get value:
    # the textarea holds the text, the answer input is empty).
    src, dst = boxes[0], boxes[1]
    if not a.value(ref(src)).strip():
        src, dst = dst, src
    a.click(ref(src))
    a.press("Control+a")
    a.press("Control+c")
    a.click(ref(dst))
    a.press("Control+v")
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "copy-paste-2")
def copy_paste_2(a: Agent) -> None:
    m = re.search(r"from the (?:(\d)\w\w )?text area", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    a.click(f"#text-{m.group(1) or 1}")
    a.press("Control+a")
    a.press("Control+c")
    a.click("#answer-input")
    a.press("Control+v")
    _submit(a)


@task("hand", "terminal")
def terminal(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"ending with the extension \.(\w+)", u)
    if not m and "no file extension" not in u:
        raise TaskGaveUp("utterance not understood")
    a.focus("#terminal-target")  # the page reads key events there, one keydown a character
    a.keyboard("type", "ls")
    a.press("Enter")
    lines = a.text("#terminal-contents").splitlines()
    at = [i for i, line in enumerate(lines) if line.split()[-1:] == ["ls"]]
    if not at or at[-1] + 1 >= len(lines):
        raise TaskGaveUp("the terminal shows no listing after ls")
    listing = lines[at[-1] + 1].split()
    ext = m.group(1) if m else ""
    pick = [f for f in listing if (f.endswith("." + ext) if ext else "." not in f)]
    if not pick:
        raise TaskGaveUp(f"no file to delete in {listing!r}")
    a.keyboard("type", f"rm {pick[0]}")
    a.press("Enter")


@task("hand", "enter-date")
def enter_date(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"(\d\d)/(\d\d)/(\d{4})", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    mm, dd, yyyy = m.groups()
    nodes = a.snapshot()
    field_ = next(
        (n for n in nodes if n.ref and n.role in ("textbox", "spinbutton")),
        None,
    )
    target = ref(field_) if field_ else "#tt"
    a.focus(target)
    a.keyboard("type", mm + dd + yyyy)  # a date input takes its parts as keystrokes
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "enter-time")
def enter_time(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"(\d{1,2}):(\d\d) ?(AM|PM)", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    hh, mi, ap = m.groups()
    a.focus("#tt")
    a.keyboard("type", hh.zfill(2) + mi + ap[0])
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "text-editor")
def text_editor(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"give (?:the text (.+?)|everything) the (style|color) (\w+)", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    word, kind, style = m.group(1), m.group(2), m.group(3)
    if kind == "color" or "make everything the color" in u:
        raise TaskGaveUp("the colour picker's entries carry only hex values: nothing names red")
    key = {"bold": "Control+b", "italics": "Control+i", "underlined": "Control+u"}[style]
    words = a.text(".ql-editor").split()
    a.click(".ql-editor")
    if word:
        if words.count(word) != 1:
            raise TaskGaveUp(f"{word!r} is not once in the text")
        # Word by word: on Linux Control+ArrowRight stops at a word's end, so k+1 jumps end
        # word k and Control+Shift+ArrowLeft selects it.
        a.press("Control+Home")
        for _ in range(words.index(word) + 1):
            a.press("Control+ArrowRight")
        a.press("Control+Shift+ArrowLeft")
    else:
        a.press("Control+a")
    a.press(key)
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "drag-single-shape")
def drag_single_shape(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"Drag the item (\w+)", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    dx, dy = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}[m.group(1)]
    x, y, w, h = a.box(".black-shape")
    cx, cy = x + w / 2, y + h / 2
    a.mouse("move", cx, cy)
    a.mouse("down")
    a.mouse("move", cx + dx * 20, cy + dy * 20)
    a.mouse("move", cx + dx * 40, cy + dy * 40)
    a.mouse("up")
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "click-scroll-list")
def click_scroll_list(a: Agent) -> None:
    u = a.utterance()
    m = re.match(r"Select (.+) from the scroll list and click Submit\.", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    wanted = m.group(1).split(", ")
    nodes = a.snapshot()
    a.select(ref(find(nodes, "listbox")), *wanted)  # a <select multiple>: several values at once
    a.click(ref(find(nodes, "button", "Submit")))


@task("hand", "use-spinner")
def use_spinner(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"Select (-?\d+) with the spinner", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    n = int(m.group(1))  # the spinner starts at 0 and refuses typed keys
    arrow = ".ui-spinner-up" if n > 0 else ".ui-spinner-down"
    for _ in range(abs(n)):
        a.click(arrow)
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "resize-textarea")
def resize_textarea(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"the (width|height) is (smaller|larger)", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    sign = 1 if m.group(2) == "larger" else -1
    x, y, w, h = a.box("textarea")
    gx, gy = x + w - 3, y + h - 3  # the resize grip, bottom right
    tx, ty = (gx + sign * 25, gy) if m.group(1) == "width" else (gx, gy + sign * 20)
    a.mouse("move", gx, gy)
    a.mouse("down")
    a.mouse("move", (gx + tx) / 2, (gy + ty) / 2)
    a.mouse("move", tx, ty)
    a.mouse("up")
    a.click(ref(find(a.snapshot(), "button", "Submit")))


@task("hand", "drag-shapes")
def drag_shapes(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r"Drag all (rectangles|circles|triangles) into the black box", u)
    if not m:
        raise TaskGaveUp(f"utterance not understood: {u!r}")
    tag = {"rectangles": "rect", "circles": "circle", "triangles": "polygon"}[m.group(1)]
    # The box is the last <rect> the page draws, so the k-th <rect> of the svg is a shape.
    # Each shape goes by pointer to its own spot inside the box: dropped on the box's centre,
    # the first shape would cover that point for the next drop (both tools then refuse).
    count = a.count(f"#area_svg {tag}:not(#shape-container)")
    bx, by, bw, bh = a.box("#shape-container")
    for k in range(1, count + 1):
        x, y, w, h = a.box(f"#area_svg {tag}:nth-of-type({k})")
        sx, sy = x + w / 2, y + h / 2
        tx = bx + bw * (0.3 + 0.4 * ((k - 1) % 3) / 2)
        ty = by + bh * (0.35 + 0.3 * ((k - 1) // 3 % 2))
        a.mouse("move", sx, sy)
        a.mouse("down")
        a.mouse("move", (sx + tx) / 2, (sy + ty) / 2)
        a.mouse("move", tx, ty)
        a.mouse("up")
    a.click(ref(find(a.snapshot(), "button", "Submit")))


# core: ordinary tasks (clicks, fields, lists): what issue 19 measures


@task("core", "click-button", "unicode-test")
def click_button(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    a.click(ref(find(a.snapshot(), "button", want)))


@task("core", "click-test")
def click_test(a: Agent) -> None:
    a.utterance()
    a.click(ref(find(a.snapshot(), "button")))


@task("core", "click-test-2", "click-test-transfer")
def click_test_2(a: Agent) -> None:
    m = re.search(r"Click button (\w+)\.", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    a.click(ref(find(a.snapshot(), "button", m.group(1))))


@task("core", "click-button-sequence")
def click_button_sequence(a: Agent) -> None:
    a.utterance()
    nodes = a.snapshot()
    a.click(ref(find(nodes, "button", "ONE")))
    a.click(ref(find(nodes, "button", "TWO")))


def _names_list(s: str) -> list[str]:
    s = re.sub(r",? and ", ", ", s)
    return [x.strip() for x in s.split(",") if x.strip()]


@task("core", "click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer")
def click_checkboxes(a: Agent) -> None:
    m = re.match(r"Select (.*?) and click Submit\.", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    wanted = [] if m.group(1) == "nothing" else [w.strip() for w in m.group(1).split(",")]
    nodes = a.snapshot()
    for w in wanted:
        a.click(ref(find(nodes, "checkbox", w)))
    _submit(a, nodes)


@task("core", "click-option")
def click_option(a: Agent) -> None:
    m = re.match(r"Select (.*?) and click Submit\.", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    nodes = a.snapshot()
    a.click(ref(find(nodes, "radio", m.group(1))))
    _submit(a, nodes)


@task("core", "click-link")
def click_link(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    a.click(ref(find(a.snapshot(), None, want)))


@task("core", "click-tab")
def click_tab(a: Agent) -> None:
    m = re.search(r"Tab #(\d)", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    nodes = a.snapshot()
    a.click(ref(find(nodes, "link", f"Tab #{m.group(1)}")))


@task("core", "click-tab-2")
def click_tab_2(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    nodes = a.snapshot()
    tabs = [n for n in nodes if n.role == "link" and re.fullmatch(r"Tab #\d", n.name) and n.ref]
    for tab in tabs:
        a.click(ref(tab))
        nodes = a.snapshot()
        hit = [n for n in nodes if n.ref and (n.name or n.text) == want and n.role != "tab"]
        if hit:
            a.click(ref(hit[0]))
            return
    raise TaskGaveUp(f"no tab showed a link {want!r} with a ref")


@task("core", "click-collapsible")
def click_collapsible(a: Agent) -> None:
    a.utterance()
    nodes = a.snapshot()
    a.click(ref(find(nodes, "tab", lambda s: s.startswith("Section"))))
    _submit(a)


@task("core", "click-collapsible-2")
def click_collapsible_2(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    sections = [n for n in a.snapshot() if n.role == "tab" and n.name.startswith("Section")]
    for sec in sections:
        a.click(ref(sec))
        nodes = a.snapshot()
        hit = [n for n in nodes if n.ref and (n.name or n.text) == want and n.role != "tab"]
        if hit:
            a.click(ref(hit[0]))
            return
    raise TaskGaveUp(f"no section showed a link {want!r} with a ref")


@task("core", "click-widget")
def click_widget(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    role = {"text": "textbox", "textarea": "textbox"}.get(want, want)
    a.click(ref(find(a.snapshot(), role)))


@task("core", "enter-text", "enter-text-dynamic")
def enter_text(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    nodes = a.snapshot()
    a.fill(ref(find(nodes, "textbox")), want)
    _submit(a, nodes)


@task("core", "enter-text-2")
def enter_text_2(a: Agent) -> None:
    u = a.utterance()
    want = quoted(u)[0]
    want = want.lower() if "lower case" in u else want.upper()
    nodes = a.snapshot()
    a.fill(ref(find(nodes, "textbox")), want)
    _submit(a, nodes)


@task("core", "enter-password")
def enter_password(a: Agent) -> None:
    want = quoted(a.utterance())[0]
    nodes = a.snapshot()
    boxes = [n for n in nodes if n.role == "textbox" and n.ref]
    for b in boxes[:2]:
        a.fill(ref(b), want)
    _submit(a, nodes)


@task("core", "login-user")
def login_user(a: Agent) -> None:
    user, password = quoted(a.utterance())[:2]
    nodes = a.snapshot()
    boxes = [n for n in nodes if n.role == "textbox" and n.ref]
    a.fill(ref(boxes[0]), user)
    a.fill(ref(boxes[1]), password)
    _submit(a, nodes, "Login")


@task("core", "focus-text")
def focus_text(a: Agent) -> None:
    a.utterance()
    a.focus(ref(find(a.snapshot(), "textbox")))


@task("core", "focus-text-2")
def focus_text_2(a: Agent) -> None:
    m = re.search(r"the (\d)\w\w input textbox", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    boxes = [n for n in a.snapshot() if n.role == "textbox" and n.ref]
    a.focus(ref(boxes[int(m.group(1)) - 1]))


@task("core", "choose-list")
def choose_list(a: Agent) -> None:
    m = re.match(r"Select (.*) from the list and click Submit\.", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    nodes = a.snapshot()
    a.select(ref(find(nodes, "combobox")), m.group(1))
    _submit(a, nodes)


@task("core", "simple-arithmetic")
def simple_arithmetic(a: Agent) -> None:
    a.utterance()
    problem = a.text("#math-problem")
    m = re.match(r"(-?\d+)\s*([-+x*])\s*(-?\d+)", problem)
    if not m:
        raise TaskGaveUp(f"problem not understood: {problem!r}")
    x, op, y = int(m.group(1)), m.group(2), int(m.group(3))
    answer = {"+": x + y, "-": x - y, "x": x * y, "*": x * y}[op]
    nodes = a.snapshot()
    a.fill(ref(find(nodes, "textbox")), str(answer))
    _submit(a, nodes)


@task("core", "search-engine")
def search_engine(a: Agent) -> None:
    u = a.utterance()
    m = re.search(r'enter "(.+?)" and press "Search", then find and click the (\d+)\w\w', u)
    if not m:
        raise TaskGaveUp("utterance not understood")
    term, k = m.group(1), int(m.group(2))
    nodes = a.snapshot()
    a.fill(ref(find(nodes, "textbox")), term)
    a.click(ref(find(nodes, "button", "Search")))
    page, index = (k - 1) // 3 + 1, (k - 1) % 3  # three results a page
    nodes = a.snapshot()
    if page > 1:
        a.click(ref(find(nodes, "link", str(page))))
        nodes = a.snapshot()
    pager = {"<<", "<", ">", ">>", "First", "Previous", "Next", "Last"}
    results = [
        n
        for n in nodes
        if n.role == "link" and n.ref and not n.name.isdigit() and n.name not in pager
    ]
    if len(results) <= index:
        raise TaskGaveUp(f"{len(results)} result links with a ref on page {page}")
    a.click(ref(results[index]))


@task("core", "choose-date-easy")
def choose_date_easy(a: Agent) -> None:
    m = re.search(r"Select (\d\d)/(\d\d)/(\d{4})", a.utterance())
    if not m:
        raise TaskGaveUp("utterance not understood")
    day = str(int(m.group(2)))
    a.click(ref(find(a.snapshot(), "textbox")))  # the date picker opens on the month
    nodes = a.snapshot()
    a.click(ref(find(nodes, "link", day)))
    _submit(a)
