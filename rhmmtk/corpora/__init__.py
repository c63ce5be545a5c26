"""Corpus preparation: a corpus as distributed -> a data directory of lists, text
(letters or wav.scp) and alignments that every recipe reads the same way.

  nettalk   the NETtalk dictionary -> train/dev/test words (paper 002's split)
  timit     a TIMIT-layout corpus -> train/dev/core-test utterances, frame alignments
  synthetic corpora generated with a known answer (TIMIT-layout frames; a small
            NETtalk-format dictionary)
"""
