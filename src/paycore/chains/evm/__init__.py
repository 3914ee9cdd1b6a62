"""EVM chains: deposit-address derivation now; the watcher and transaction builders later."""
