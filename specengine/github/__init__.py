"""specengine in GitHub Actions: a baseline results file from the main branch's last good run, and one
pull-request comment kept up to date (`specengine github baseline`, `specengine github comment`).

Everything goes through GitHub's REST API with what a workflow provides (`GITHUB_TOKEN`,
`GITHUB_REPOSITORY`, `GITHUB_EVENT_PATH`, `GITHUB_API_URL`, `GITHUB_RUN_ID`, `GITHUB_SERVER_URL`),
over the transport every other request uses (transport/endpoint_client.py).
"""
