"""Evidence: what was measured, brought back to the plan. A request log summarised into a forecast, benchmarks
predicted and calibrated, production's gauges and histograms read back to the serving model.
"""
