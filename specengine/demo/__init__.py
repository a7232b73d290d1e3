"""The built-in demo agent: a scripted weather and booking agent served on a loopback port.

`script` decides what it answers, `server` speaks chat completions over HTTP, `loopback` is the
threaded HTTP server underneath (the test servers use it too).
"""
