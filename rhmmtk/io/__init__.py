"""Reading and writing rhmmtk's files: text tables and HDF5 archives."""
