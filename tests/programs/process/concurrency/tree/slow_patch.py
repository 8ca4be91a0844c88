"""A patch that counts its calls and sleeps while it applies (the soak tests' patch.py)."""
import time

calls = 0


def apply(ctx):
    global calls
    calls += 1
    time.sleep(0.05)
    ctx.setattr(ctx.module, "VALUE", ctx.module.VALUE + 100)
