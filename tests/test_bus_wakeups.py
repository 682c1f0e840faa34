"""A burst published from another thread wakes the reader once, and nothing is ever lost."""

from __future__ import annotations

import asyncio
import threading

from tuiapp import bus as bus_module
from tuiapp.bus import EventBus
from tuiapp.events import Note


async def test_burst_from_a_thread_is_one_wakeup_and_every_event_arrives(monkeypatch):
    wakes = []
    real = bus_module.set_from_any_thread
    monkeypatch.setattr(bus_module, "set_from_any_thread", lambda loop, ev: (wakes.append(1), real(loop, ev)))
    bus = EventBus()
    sub = bus.subscribe("reader")
    got: list[str] = []

    async def read() -> None:
        while (event := await sub.get()) is not None:
            got.append(event.text)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # the reader is waiting

    def burst(tag: str) -> None:
        for i in range(8):
            bus.publish(Note(text=f"{tag}{i}", source="t"))

    for round_ in range(20):
        thread = threading.Thread(target=burst, args=(f"r{round_}-",))
        thread.start()
        thread.join()
        await asyncio.sleep(0.01)
    bus.close()
    await asyncio.wait_for(reader, 5)
    assert got == [f"r{r}-{i}" for r in range(20) for i in range(8)]
    assert len(wakes) <= 20 + 1  # one per burst (plus close), not one per event


async def test_concurrent_publishers_lose_nothing():
    bus = EventBus()
    sub = bus.subscribe("reader", maxlen=1_000_000)
    got = []

    async def read() -> None:
        while (event := await sub.get()) is not None:
            got.append(event.text)
            if len(got) % 97 == 0:
                got.extend(e.text for e in sub.drain())  # the dashboard's pattern

    reader = asyncio.create_task(read())
    threads = [threading.Thread(target=lambda k=k: [bus.publish(Note(text=f"{k}:{i}", source="t"))
                                                    for i in range(2000)]) for k in range(4)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        await asyncio.sleep(0.005)
    for _ in range(200):
        if len(got) == 8000:
            break
        await asyncio.sleep(0.01)
    bus.close()
    await asyncio.wait_for(reader, 5)
    assert sorted(got) == sorted(f"{k}:{i}" for k in range(4) for i in range(2000))


async def test_lazy_kinds_ride_the_next_wake_or_the_tick_after_them(monkeypatch):
    """Dense events (GPU samples) do not wake a lazy reader; they come with the next event
    that does, or on the next tick of the lazy period; nothing is lost or reordered."""
    from tuiapp.common.ticks import until_tick_s
    from tuiapp.events import DENSE_KINDS, GpuSample

    wakes = []
    real = bus_module.set_from_any_thread
    monkeypatch.setattr(bus_module, "set_from_any_thread", lambda loop, ev: (wakes.append(1), real(loop, ev)))
    bus = EventBus()
    sub = bus.subscribe("printer", lazy_kinds=DENSE_KINDS, lazy_period_s=0.2)
    got: list[tuple[float, str]] = []
    loop = asyncio.get_running_loop()

    async def read() -> None:
        while (event := await sub.get()) is not None:
            got.append((loop.time(), event.kind))

    reader = asyncio.create_task(read())
    # start just after a tick of the lazy period, so the next one is 0.19 s away (started
    # anywhere, a tick fell inside the 10 ms windows below one run in twenty)
    await asyncio.sleep(until_tick_s(0.2) + 0.01)
    for i in range(8):
        bus.publish(GpuSample(index=i))
    await asyncio.sleep(0.01)
    assert got == [] and wakes == []  # samples alone wake no one at once
    bus.publish(Note(text="trial started", source="t"))  # an event that must be seen now
    await asyncio.sleep(0.01)
    assert [k for _, k in got] == ["gpu"] * 8 + ["note"]  # the samples came with it, in order
    woken = len(wakes)
    t0 = loop.time()
    for i in range(8):
        threading.Thread(target=bus.publish, args=(GpuSample(index=i),)).start()  # from a thread too
    while len(got) < 17:
        await asyncio.sleep(0.01)
        assert loop.time() - t0 < 2.0, "lazy samples never delivered"
    assert loop.time() - t0 <= 0.2 + 0.1  # within one lazy period
    assert len(wakes) == woken + 1  # eight samples from threads: one wake, on the tick
    bus.close()
    await asyncio.wait_for(reader, 5)
