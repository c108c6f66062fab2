"""Locust users for bench/load_queue.py: nurses working the triage queue (list, filter, open, note, claim).

Each simulated nurse signs in with her own account (LOAD_USERS_FILE: JSON {"users": [...], "password": ...,
"findings": [...]}) and, until the run ends, pages through the queue with the filters nurses use, opens
findings side by side with the record, writes a note now and then and claims an item. A claim that
someone else won first is the workflow's answer (the item says who has it), not an error.
"""
from __future__ import annotations

import itertools
import json
import os
import random
import re

from locust import HttpUser, between, task

DATA = json.loads(open(os.environ["LOAD_USERS_FILE"], encoding="utf-8").read())  # noqa: SIM115
_accounts = itertools.cycle(DATA["users"])
FILTERS = [{}, {}, {"safety": "yes"}, {"severity": "high"}, {"kind": "gap", "category": "medication"},
           {"sla": "breached"}, {"age": "gt7d"}, {"status": "in_review", "mine": "on"}, {"sort": "newest"}]
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Nurse(HttpUser):
    wait_time = between(0.5, 2.0)  # reading the page between clicks

    def on_start(self) -> None:
        self.username = next(_accounts)
        page = self.client.get("/login/", name="/login/")
        token = CSRF.search(page.text)
        with self.client.post("/login/", name="/login/ (POST)", catch_response=True, data={
            "username": self.username, "password": DATA["password"], "csrfmiddlewaretoken": token.group(1) if token else "",
        }, headers={"Referer": f"{self.host}/login/"}) as response:
            if "/login/" in response.url:  # still on the form: the sign-in was refused
                response.failure("sign-in refused")

    def _page(self, path: str, name: str, **kwargs) -> None:  # type: ignore[no-untyped-def]
        """A page a signed-in nurse reads; landing on the sign-in form (session lost) is an error."""
        with self.client.get(path, name=name, catch_response=True, **kwargs) as response:
            if response.status_code == 200 and "/login/" in response.url:
                response.failure("redirected to sign-in")

    def _csrf(self) -> str:
        return self.client.cookies.get("csrftoken", "")

    @task(6)
    def queue(self) -> None:
        self._page("/triage/", "/triage/ (queue)", params=random.choice(FILTERS))

    @task(3)
    def finding(self) -> None:
        self._page(f"/triage/findings/{random.choice(DATA['findings'])}/", "/triage/findings/<id>/")

    @task(1)
    def note(self) -> None:
        finding = random.choice(DATA["findings"])
        self.client.post(f"/triage/findings/{finding}/note/", name="/triage/findings/<id>/note/",
                         data={"text": "Called the patient, will follow up.", "csrfmiddlewaretoken": self._csrf()},
                         headers={"Referer": f"{self.host}/triage/findings/{finding}/", "X-CSRFToken": self._csrf()})

    @task(1)
    def claim(self) -> None:
        finding = random.choice(DATA["findings"])
        with self.client.post(f"/triage/findings/{finding}/claim/", name="/triage/findings/<id>/claim/",
                              data={"csrfmiddlewaretoken": self._csrf()}, catch_response=True,
                              headers={"Referer": f"{self.host}/triage/findings/{finding}/", "X-CSRFToken": self._csrf()}) as response:
            if response.status_code in (200, 302, 409):  # 409: another nurse claimed it first
                response.success()
