"""A stand-in for one Streamlit worker behind the proxy, for tests/cli/test_serve.py: ``python
stub_worker.py PORT INDEX``. It answers every request with ``worker INDEX PATH``; ``/_stcore/health``
with ``ok`` (after 30 s once ``/freeze`` was asked: a worker whose interpreter is held); a websocket
upgrade with 101, then echoes what it is sent, prefixed by its index."""
import asyncio
import sys

PORT, INDEX = int(sys.argv[1]), int(sys.argv[2])
frozen = False


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    global frozen
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    first, *lines = head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
    path = first.split(" ")[1]
    if fields.get("upgrade", "").lower() == "websocket":
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        await writer.drain()
        while data := await reader.read(100):
            writer.write(b"worker%d:" % INDEX + data)
            await writer.drain()
        writer.close()
        return
    await reader.readexactly(int(fields.get("content-length", 0)))
    if path == "/freeze":
        frozen = True
    if path.endswith("/_stcore/health"):
        if frozen:
            await asyncio.sleep(30)
        text = b"ok"
    else:
        text = f"worker {INDEX} {path}".encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(text) + text)
    await writer.drain()
    writer.close()


async def main() -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", PORT, reuse_address=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
