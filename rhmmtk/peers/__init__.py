"""Peer systems: other toolkits' own code run on the recipes' data, beside ours.

A peer is not one of rhmmtk's model families (rhmmtk.models): its model is the other
toolkit's objects, trained and decoded by that toolkit's code, and it needs that
toolkit installed. It reads the toolkit's inputs from our files and writes our
alignment format, so `rhmmtk score` and `rhmmtk compare` treat it as any other system.
"""
