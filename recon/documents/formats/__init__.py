"""Invoice documents in the formats suppliers really send, each read exactly and written back:
GST e-invoice JSON, UBL 2.1 / Peppol BIS 3, UN/CEFACT CII, Factur-X / ZUGFeRD PDFs and PDFs with a
text layer. Every reader returns a `reading.Reading`; `checks.py` holds the rules they all keep;
`detect.py` tells which reader a file needs."""
