"""ReviewTrigger's command in the control scene: "notify the reviewers", locally.

It gets the event payload as JSON on stdin and the actions in ``$AHP_ACTIONS``; it appends one
line to ``.ahp/notifications.log`` (git-ignored) and prints what the agent is told.
"""

import json
import os
import sys

payload = json.load(sys.stdin)
issue = payload.get("issue") or {}
with open(os.path.join(".ahp", "notifications.log"), "a", encoding="utf-8") as log:
    log.write(json.dumps({"issue": issue.get("id"), "actions": os.environ.get("AHP_ACTIONS"),
                          "session": payload.get("session_id")}) + "\n")
print(f"reviewers notified of {issue.get('id')}; expect an answer within 2 hours")
