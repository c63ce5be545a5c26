"""The inputs of the discrete models, shared by every family that reads symbols: MFCC
features from audio (`acoustic`), k-means codebooks (`codebook`) and text symbols to
observation codes (`observations`)."""
