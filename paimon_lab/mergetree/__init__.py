"""The LSM merge tree of primary-key tables: key-value files, levels, merge functions, compaction."""
