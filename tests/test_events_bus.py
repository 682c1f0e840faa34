import asyncio
import threading

from tuiapp.bus import EventBus
from tuiapp.events import Alert, GpuSample, RunDone, dump_event, load_event


def test_event_roundtrip_keeps_type_and_fields():
    events = [
        GpuSample(index=3, mem_used_bytes=10, mem_total_bytes=20, pcie_rx_bytes_s=1.5e9),
        Alert(alert_kind="oom", message="CUDA out of memory", ranks=[0, 3], first_line=12),
        RunDone(run_index=0, requests=5, duration_s=1.0, decode_tok_s=89.5, output_tok_s=88.0),
    ]
    for ev in events:
        back = load_event(dump_event(ev))
        assert type(back) is type(ev)
        assert back == ev


def test_slow_subscriber_drops_oldest_and_counts():
    bus = EventBus()
    slow = bus.subscribe("slow", maxlen=3)
    fast = bus.subscribe("fast", maxlen=100)
    for i in range(10):
        bus.publish(GpuSample(index=i))
    assert [e.index for e in slow.drain()] == [7, 8, 9]
    assert slow.dropped == 7
    assert len(fast.drain()) == 10 and fast.dropped == 0
    assert bus.dropped == {"slow": 7, "fast": 0}


async def test_async_iteration_receives_events_from_other_threads():
    bus = EventBus()
    sub = bus.subscribe("sink")
    got = []

    async def consume():
        async for ev in sub:
            got.append(ev.index)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)  # let the consumer bind to the loop
    threads = [threading.Thread(target=lambda k=k: bus.publish(GpuSample(index=k))) for k in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    await asyncio.sleep(0.05)
    bus.close()
    await asyncio.wait_for(task, 2)
    assert sorted(got) == [0, 1, 2, 3, 4]
