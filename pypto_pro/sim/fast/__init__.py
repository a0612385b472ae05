"""The fast path: timed launches recorded, scheduled in compiled code and replayed; relaunches
replayed from kept recordings, as tapes of prebuilt steps in two lanes with compiled copies. Each
gives what the reference engine gives; `PYPTOPRO_SIM_CACHE=off` turns every relaunch cache off."""
