"""The LanceDB index kept true to the folder: the table, the indexer, box rows, the folder
watcher."""
