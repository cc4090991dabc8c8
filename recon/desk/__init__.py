"""The finance desk: a small web application in which the finance team reads nights and answers
handovers, every decision signed by the person's passkey (docs/desk.md)."""
