/**
 * Security headers for every response. The Content-Security-Policy is one the browser
 * client passes: its scripts and styles are files served from here, never inline script.
 * Images from other hosts are allowed unless the operator keeps them out altogether
 * (`REMOTE_IMAGES=block`); with `click`, the client holds them back on public pages
 * (src/web/remote-images.ts). Everything else (media, fonts, frames) is this server's only.
 */
import type { NextFunction, Request, Response } from "express";
import type { RemoteImagePolicy } from "../config.js";

/** The policy with images from anywhere (`allow`, `click`). */
export const CONTENT_SECURITY_POLICY = contentSecurityPolicy("click");

export function contentSecurityPolicy(remoteImages: RemoteImagePolicy): string {
  return [
    "default-src 'self'",
    remoteImages === "block" ? "img-src 'self' data: blob:" : "img-src 'self' data: https: http:",
    "style-src 'self' 'unsafe-inline'",
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function securityHeaders(remoteImages: RemoteImagePolicy) {
  const policy = contentSecurityPolicy(remoteImages);
  return (req: Request, res: Response, next: NextFunction) => {
    // setHeader, not express's res.set: the same headers (none is a Content-Type, the one
    // res.set treats apart), without its per-header work on every response (issue 27).
    res.setHeader("Content-Security-Policy", policy);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader("Referrer-Policy", "same-origin");
    res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
    if (req.secure) res.set("Strict-Transport-Security", "max-age=15552000");
    next();
  };
}
