"""DynamicLossScaler's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
from ..static_loss_scaler.smoke import scaler

case = scaler("DynamicLossScaler")
