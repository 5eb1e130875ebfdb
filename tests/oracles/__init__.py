"""Peer implementations the tests compare paimon_lab against, each run out of process."""
