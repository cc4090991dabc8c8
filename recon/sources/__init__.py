"""Where a night's documents come from: mailboxes, drop folders, ERP exports."""
