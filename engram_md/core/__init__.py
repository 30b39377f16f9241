"""The ground every part stands on: typed values, errors, config, paths, atomic files, the lock."""
