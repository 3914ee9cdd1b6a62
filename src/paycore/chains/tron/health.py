"""What an operator asks of a Tron chain's node before trusting it with deposits: does it keep
transaction history, and how is the watcher faring with it.

A java-tron node with ``storage.transHistory.switch = "off"`` -- or a lite full node, for the
blocks it pruned -- serves blocks but answers ``[]`` for their transaction infos, where every
TRC20 deposit is. The watcher finds out on its own (``reader``: an error logged once, and
``TronChain.watch_status``), but only once it reaches a block with a contract call; this
check asks at once, for a command such as ``paycore chains check`` or a deployment test.
"""

from __future__ import annotations

import attrs

from . import scan
from .chain import TronChain
from .node import NodeError
from .reader import WatchStatus

#: Blocks below the confirmed head searched for one holding a contract call.
SEARCH_BLOCKS = 20


@attrs.frozen
class HistoryCheck:
    """``ok`` when the node answered the transaction infos of a confirmed block holding a
    contract call (``block``); otherwise ``detail`` says what is wrong."""

    ok: bool
    detail: str
    block: int | None = None


def check_history(chain: TronChain, *, search: int = SEARCH_BLOCKS) -> HistoryCheck:
    """Ask the node for the infos of the newest confirmed block that holds a contract call
    (up to ``search`` blocks down); a node that cannot answer is a failed check too."""
    node = chain.node
    try:
        head = scan.number(node.post("wallet/getnowblock"))
        top = head - chain.config.confirmations
        for number in range(top, max(top - search, 0), -1):
            block = node.post("wallet/getblockbynum", {"num": number})
            if not isinstance(block, dict) or "blockID" not in block:
                return HistoryCheck(False, f"the node has no block {number}, below its head")
            calls = scan.contract_calls(block)
            if not calls:
                continue
            infos = node.post("wallet/gettransactioninfobyblocknum", {"num": number})
            if not infos:
                return HistoryCheck(
                    False,
                    f"the node answers no transaction infos for block {number}, which has "
                    f"{len(calls)} contract calls: it keeps no transaction history",
                    number,
                )
            return HistoryCheck(True, f"transaction infos of block {number} served", number)
    except NodeError as exc:
        return HistoryCheck(False, str(exc))
    return HistoryCheck(True, f"no contract call in the {search} confirmed blocks to ask about")


def watch_status(chain: TronChain) -> WatchStatus | None:
    """What the chain's watcher in this process last reported (None: no watcher ran)."""
    return chain.watch_status
