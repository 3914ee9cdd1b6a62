"""Handlers for the staking helpers (Ethereum only), each by GET (query; lists are
comma-separated) or POST (JSON). ``paycore.management.staking`` does the work."""

from __future__ import annotations

from ..domain.records import Json
from ..management import staking
from .routing import Call


def staking_info(call: Call) -> Json:
    return staking.staking_info(
        call.gateway.settings, call.gateway.chains, call.read(staking.StakingInfo)
    )


def stake(call: Call) -> Json:
    return staking.stake(call.gateway.settings, call.gateway.chains, call.read(staking.StakeChange))


def unstake(call: Call) -> Json:
    return staking.unstake(
        call.gateway.settings, call.gateway.chains, call.read(staking.StakeChange)
    )


def claim(call: Call) -> Json:
    return staking.claim(call.gateway.settings, call.gateway.chains, call.read(staking.Claim))
