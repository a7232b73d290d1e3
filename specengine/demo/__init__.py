"""The built-in demo agent: a scripted weather and booking agent served on a loopback port."""
