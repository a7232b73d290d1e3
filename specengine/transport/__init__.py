"""HTTP on the wire, for agent endpoints and the judge alike: one aiohttp session per endpoint, and an
httpx transport over it for the streams and the openai SDK. Neither side knows the other: endpoints
and the judge both import this package."""
