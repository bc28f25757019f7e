import socket
for family in (socket.AF_INET, socket.AF_INET6):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(("127.0.0.1", 80))
        print("CONNECTED")
    except Exception as e:
        print("refused socket", type(e).__name__)
try:
    socket.create_connection(("example.com", 80), timeout=1)
    print("CONNECTED")
except Exception as e:
    print("refused connection", type(e).__name__)
