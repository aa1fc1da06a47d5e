"""Transport: one request over HTTP/1.1 and its bytes stamped on arrival.

`connection` sends and reads (kernel receive stamps from `stamps`), `deadline` bounds every wait, `sse` splits the
body into events, `stream` runs one attempt end to end and classifies it into a `StreamOutcome`.
"""
