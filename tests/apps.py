"""What the tests' in-process clients need to reach the app."""

# the Host an app bound to loopback answers (hippograph.server.hosts): TestClient's own "testserver" is
# refused like any other name the server does not know
LOCAL = "http://localhost"
