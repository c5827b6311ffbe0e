"""``bay dialog accept [text] | dismiss | status``: the session answers the dialog a page
opened on its current tab, or reads what is open on its tabs (the dialogs themselves are
held by :class:`browserbay.keeper.dialogs.Dialogs`)."""

from __future__ import annotations

from browserbay.keeper.base import Answer
from browserbay.keeper.dialogs import SHOWN, Dialogs, describe
from browserbay.keeper.route import LeaseCall
from browserbay.refusals import Refusal, clip


class DialogVerbs:
    def __init__(self, dialogs: Dialogs) -> None:
        self.dialogs = dialogs

    async def dialog(self, call: LeaseCall) -> Answer:
        action = str(call.args["action"])
        mine = self.dialogs.open_of(call.session.ref.id)
        if action == "status":
            rows = [dict(info.as_row(), url=tab.page.url) for tab, info in mine]
            lines = [f"{tab.id}  {describe(info)}  {tab.page.url}" for tab, info in mine]
            return {"dialogs": rows}, "\n".join(lines) if lines else "no dialog is open"
        current = call.lease.current
        tab = call.lease.tabs.get(current) if current is not None else None
        info = next((i for t, i in mine if t is tab), None)
        if tab is None or info is None:
            fix = (
                f"bay tab {mine[0][0].id}   (a {mine[0][1].kind} is open there), then "
                f"bay dialog {action}"
                if mine
                else "bay dialog status   (while a dialog is open, every answer names it)"
            )
            where = f"your current tab {current}" if current else "your tabs"
            raise Refusal("no_dialog", where=where, fix=fix)
        text = call.args.get("text")
        if text is not None and (action != "accept" or info.kind != "prompt"):
            raise Refusal(
                "usage",
                detail=f"text answers a prompt; this is a {info.kind}: "
                f"bay dialog {action} without text",
                verb="dialog",
            )
        accept = action == "accept"
        answered = await self.dialogs.answer(tab, accept, None if text is None else str(text))
        if answered is None:  # answered meanwhile (a human, the bound): said as a notice
            raise Refusal("no_dialog", where=f"your current tab {tab.id}", fix="bay snapshot -i")
        done = "accepted" if accept else "dismissed"
        data = {"tab": tab.id, "type": info.kind, "message": clip(info.message, SHOWN)}
        data.update(action=done, url=tab.page.url)
        with_text = " with your text" if text is not None else ""
        return data, f"{done} the {describe(info)} on {tab.id}{with_text}"
