"""Sessions as notebooks: the recorder, the event-log codec, the reader, the notebook's
signature, workspace snapshots, and resume / restore / re-execute from them."""
