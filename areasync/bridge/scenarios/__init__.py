"""Scenarios into ARE: loading, and the vetting and import of untrusted scenario JSON.

* `loading.py`: a registered id, an ARE or Gaia2 JSON file or string, or a Scenario object,
  loaded (`load`), with its import mode.
* `vetting.py`: untrusted scenario JSON checked before ARE's importer sees it.
* `json_import.py`: ARE's JSON importers, fed a document's long lists in pieces.
* `event_import.py`: ARE's event import (`process_events`) in linear time.
"""
