//! The player's window: winit 0.30 driven from our own loop (`pump_app_events`), pixels
//! 0.17 for drawing, plus keyboard, gamepads and audio.
//!
//! The run loop owns the timing: `wait` pumps window events for at most the runner's
//! timeout, so the same loop can poll a network socket between frames. The image is shown
//! at the core's display aspect ratio, its height scaled by the largest integer that fits
//! the window, or scaled down smoothly if the window is smaller (`aspect`). Rotation requested by
//! the core (SET_ROTATION) is applied while copying into the pixels buffer. In netplay the
//! buffer is taller by a status bar below the image (`status_bar`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use pixels::{Pixels, PixelsBuilder, SurfaceTexture};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::platform::pump_events::{EventLoopExtPumpEvents, PumpStatus};
use winit::window::{Fullscreen, Window, WindowId};

use lightcycles::font::ADVANCE;

use super::aspect::{self, AspectRenderer};
use super::audio::{AudioOut, AudioSettings};
use super::chat_board::{ChatBoard, Shown, MAX_TYPED};
use super::chat_overlay;
use super::gamepads::Gamepads;
use super::image::{copy_rotated, rotated_size};
use super::keyboard::{hotkey, Hotkey, Keyboard};
use super::screenshot::{core_image, save_png, screenshot_path, ScreenshotError, ShotAt};
use super::status_bar;
use super::Requests;
pub use super::WindowSettings;
use crate::host::Core;
use crate::input::{Inputs, KeyMap, Pad, MAX_PLAYERS};

/// The text screen's pixels (`WindowFrontend::show_text`): 52 columns and 23 rows of the
/// 5x7 font, shown at the window's integer scale like a game of that size.
pub const TEXT_SIZE: (u32, u32) = (320, 240);
/// Pixels between the text screen's edges and its text.
const TEXT_MARGIN: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error("cannot open a window ({0}); is DISPLAY or WAYLAND_DISPLAY set? (--headless runs without one)")]
    EventLoop(String),
    #[error("cannot create the window: {0}")]
    Window(String),
    #[error("no usable GPU adapter for drawing ({0}); under Xvfb install mesa-vulkan-drivers")]
    Pixels(String),
}

/// Fails early, before anything slow (like waiting for netplay peers), when there is
/// clearly no display to open a window on.
pub fn check_display() -> Result<(), WindowError> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    if set("DISPLAY") || set("WAYLAND_DISPLAY") {
        Ok(())
    } else {
        Err(WindowError::EventLoop("no display".into()))
    }
}

/// Window state touched from winit callbacks.
struct App {
    settings: WindowSettings,
    /// Window size to open with (rotated base geometry times scale).
    initial: PhysicalSize<u32>,
    window: Option<Arc<Window>>,
    pixels: Option<Pixels<'static>>,
    renderer: Option<AspectRenderer>,
    /// The pixels buffer: the game's image with the status bar below it.
    buffer: (u32, u32),
    /// Width of the game's pixels relative to their height (`aspect::pixel_aspect`).
    par: f32,
    /// Text rows the status bar holds (0: no bar).
    bar_rows: u32,
    /// Size the drawing surface was configured for.
    surface: PhysicalSize<u32>,
    keyboard: Keyboard,
    alt: bool,
    fullscreen: bool,
    requests: Requests,
    screenshot: bool,
    redraw: bool,
    error: Option<WindowError>,
    /// Netplay status rows for the bar (see `status_bar::layout`).
    status: Vec<String>,
    /// Rows on the text screen, as last drawn (`WindowFrontend::show_text`); it shows
    /// until the game's first frame is drawn.
    text: Vec<String>,
    /// The chat line being typed (open while `Some`).
    typing: Option<String>,
    /// A secret being typed on the text screen (`WindowFrontend::ask_secret`), and whether
    /// it was given (Enter) or refused (Esc) once it is.
    secret: Option<String>,
    secret_done: Option<bool>,
    /// The chat over the picture as last drawn: its lines and the line being typed.
    chat_drawn: (Vec<Shown>, Option<String>),
    /// The status bar's rows changed since the picture was drawn.
    status_changed: bool,
}

impl App {
    fn create(&mut self, event_loop: &ActiveEventLoop) -> Result<(), WindowError> {
        let mut attrs = Window::default_attributes()
            .with_title(self.settings.title.clone())
            .with_inner_size(self.initial);
        if self.fullscreen {
            attrs = attrs.with_fullscreen(Some(Fullscreen::Borderless(None)));
        }
        let window = Arc::new(
            event_loop
                .create_window(attrs)
                .map_err(|e| WindowError::Window(e.to_string()))?,
        );
        let size = window.inner_size();
        let surface = SurfaceTexture::new(size.width.max(1), size.height.max(1), window.clone());
        let (bw, bh) = self.buffer;
        let pixels = PixelsBuilder::new(bw, bh, surface)
            .enable_vsync(self.settings.vsync)
            .clear_color(pixels::wgpu::Color::BLACK)
            .build()
            .map_err(|e| WindowError::Pixels(e.to_string()))?;
        tracing::info!(
            "window {}x{}, drawing with {:?}",
            size.width,
            size.height,
            pixels.adapter().get_info().backend
        );
        self.renderer = Some(AspectRenderer::new(
            pixels.device(),
            pixels.render_texture_format(),
        ));
        self.window = Some(window);
        self.pixels = Some(pixels);
        self.surface = PhysicalSize::new(size.width.max(1), size.height.max(1));
        Ok(())
    }

    /// A key while the chat line is open: Enter says it, Esc drops it, Backspace takes a
    /// character back; characters come as text (`chat_text`). True if the key was the
    /// chat's.
    fn chat_key(&mut self, code: KeyCode, pressed: bool, repeat: bool) -> bool {
        let Some((board, open)) = &self.settings.chat else {
            return false;
        };
        let Some(line) = &mut self.typing else {
            if pressed && !repeat && code == *open {
                // The pad goes neutral while the player types.
                self.keyboard.release_all();
                self.typing = Some(String::new());
                board.set_typing(true);
                self.redraw = true;
                return true;
            }
            return false;
        };
        if pressed {
            match code {
                KeyCode::Enter | KeyCode::NumpadEnter => {
                    if !line.trim().is_empty() {
                        board.type_line(std::mem::take(line));
                    }
                    self.typing = None;
                    board.set_typing(false);
                }
                KeyCode::Escape => {
                    self.typing = None;
                    board.set_typing(false);
                }
                KeyCode::Backspace => {
                    line.pop();
                }
                _ => {}
            }
            self.redraw = true;
        }
        true
    }

    /// Text typed into the open chat line (the key's character, as the layout makes it).
    fn chat_text(&mut self, text: &str) {
        if let Some(line) = &mut self.typing {
            let room = MAX_TYPED.saturating_sub(line.chars().count());
            line.extend(text.chars().filter(|c| !c.is_control()).take(room));
        }
    }

    fn key(&mut self, code: KeyCode, pressed: bool, repeat: bool) {
        if let Some(secret) = &mut self.secret {
            // Every key is the secret's while it is asked for: none reaches a pad.
            if pressed {
                match code {
                    KeyCode::Enter | KeyCode::NumpadEnter => self.secret_done = Some(true),
                    KeyCode::Escape => self.secret_done = Some(false),
                    KeyCode::Backspace => {
                        secret.pop();
                    }
                    _ => {}
                }
                self.redraw = true;
            }
            return;
        }
        let was_typing = self.typing.is_some();
        if self.chat_key(code, pressed, repeat) {
            return;
        }
        if was_typing {
            return;
        }
        if pressed {
            if let Some(hk) = hotkey(code, self.alt) {
                if !repeat {
                    match hk {
                        Hotkey::Pause => self.requests.toggle_pause = !self.requests.toggle_pause,
                        Hotkey::Fullscreen => self.toggle_fullscreen(),
                        Hotkey::Screenshot => self.screenshot = true,
                        Hotkey::Quit => self.requests.quit = true,
                    }
                }
                // Alt+Enter is not also Start.
                if code == KeyCode::Enter {
                    return;
                }
            }
            self.keyboard.key_down(code);
        } else {
            self.keyboard.key_up(code);
        }
    }

    fn toggle_fullscreen(&mut self) {
        self.fullscreen = !self.fullscreen;
        if let Some(w) = &self.window {
            w.set_fullscreen(self.fullscreen.then_some(Fullscreen::Borderless(None)));
        }
    }

    /// Copies the core's frame into the pixels buffer, resizing it if the geometry changed.
    fn upload(&mut self, core: &Core) {
        let image = core_image(core);
        if !image.is_valid() {
            return;
        }
        let rotation = core.rotation();
        let (w, h) = image.rotated_size(rotation);
        let size = (w, h + status_bar::height(self.bar_rows));
        let par = pixel_aspect_of(core, (w, h));
        let Some(pixels) = &mut self.pixels else {
            return;
        };
        if size != self.buffer || par != self.par {
            if let Err(e) = pixels.resize_buffer(size.0, size.1) {
                tracing::warn!(
                    "cannot resize the frame buffer to {}x{}: {e}",
                    size.0,
                    size.1
                );
                return;
            }
            tracing::info!(
                "image {w}x{h} shown at the core's aspect {:.3} (pixels {par:.3} as wide as tall)",
                core.av_info().aspect_ratio
            );
            let old = (self.buffer, self.par);
            self.buffer = size;
            self.par = par;
            self.follow_geometry(old);
        }
        if let Some(pixels) = &mut self.pixels {
            copy_rotated(&image, rotation, pixels.frame_mut(), 4);
            if self.bar_rows > 0 {
                status_bar::draw(pixels.frame_mut(), w, h, &self.status);
            }
            self.status_changed = false;
            self.text.clear();
        }
        self.draw_chat((w, h));
    }

    /// The chat to draw over the picture now, if this window has chat.
    fn chat_now(&self) -> Option<(Vec<Shown>, Option<String>)> {
        let (board, _) = self.settings.chat.as_ref()?;
        Some((board.visible(Instant::now()), self.typing.clone()))
    }

    /// Draws the chat over the top `image` pixels of the buffer.
    fn draw_chat(&mut self, (w, h): (u32, u32)) {
        let (Some(chat), Some(pixels)) = (self.chat_now(), &mut self.pixels) else {
            return;
        };
        chat_overlay::draw(pixels.frame_mut(), w, h, &chat.0, chat.1.as_deref());
        self.chat_drawn = chat;
    }

    /// The picture needs drawing again though no frame ran (paused, or waiting for the
    /// first): the status bar or the chat changed.
    fn stale(&self) -> bool {
        self.status_changed || self.chat_now().is_some_and(|c| c != self.chat_drawn)
    }

    /// Draws the picture again from what it shows: the text screen, or the core's last
    /// frame with the bar and the chat.
    fn repaint(&mut self, core: &Core) {
        self.status_changed = false;
        if self.text.is_empty() {
            self.upload(core);
        } else {
            self.draw_text();
        }
    }

    /// Draws the text screen's rows into a `TEXT_SIZE` buffer.
    fn draw_text(&mut self) {
        let Some(pixels) = &mut self.pixels else {
            return;
        };
        if self.buffer != TEXT_SIZE || self.par != 1.0 {
            if let Err(e) = pixels.resize_buffer(TEXT_SIZE.0, TEXT_SIZE.1) {
                tracing::warn!("cannot resize the frame buffer for text: {e}");
                return;
            }
            (self.buffer, self.par) = (TEXT_SIZE, 1.0);
        }
        let frame = pixels.frame_mut();
        for px in frame.chunks_exact_mut(4) {
            px.copy_from_slice(&[0, 0, 0, 255]);
        }
        let (margin, width) = (TEXT_MARGIN, TEXT_SIZE.0);
        // Rows wrap at spaces; a row's indent is kept, and its wrapped rows line up with it.
        let cols = (width as usize - 2 * margin) / ADVANCE;
        let mut rows = Vec::new();
        for row in &self.text {
            let indent = row.len() - row.trim_start().len();
            let pad = " ".repeat(indent.min(cols / 2));
            let room = ((cols - pad.len()) * ADVANCE) as u32 + 2;
            match status_bar::layout(row.trim_start(), room) {
                wrapped if wrapped.is_empty() => rows.push(String::new()),
                wrapped => rows.extend(wrapped.into_iter().map(|r| format!("{pad}{r}"))),
            }
        }
        status_bar::write(frame, width, (margin, margin), &rows);
        // The text screen has no bar: the game's first frame draws it.
        self.status_changed = false;
        self.draw_chat(TEXT_SIZE);
    }

    /// The core changed its geometry (often right after boot): if the window still has the
    /// size we gave it, give it the new geometry's size; a size the user chose stays.
    fn follow_geometry(&mut self, (old, old_par): ((u32, u32), f32)) {
        let Some(window) = &self.window else {
            return;
        };
        let scale = self.settings.scale.clamp(1, 16);
        let current = window.inner_size();
        let was = aspect::window_size(old, old_par, scale);
        if !self.fullscreen && current == PhysicalSize::new(was.0, was.1) {
            let (w, h) = aspect::window_size(self.buffer, self.par, scale);
            tracing::info!("window {w}x{h} for the image");
            let _ = window.request_inner_size(PhysicalSize::new(w, h));
        }
    }

    /// Matches the drawing surface to the window's size. Rendering to a stale surface size
    /// makes Mesa's software Vulkan (lavapipe under Xvfb) block forever in acquire.
    fn fit_surface(&mut self, size: PhysicalSize<u32>) {
        let size = PhysicalSize::new(size.width.max(1), size.height.max(1));
        if size == self.surface {
            return;
        }
        if let Some(pixels) = &mut self.pixels {
            if let Err(e) = pixels.resize_surface(size.width, size.height) {
                tracing::warn!("resize: {e}");
                return;
            }
        }
        self.surface = size;
    }

    fn render(&mut self) {
        // The window may have changed size (our own request, fullscreen) with its Resized
        // event still queued: ask the window system rather than trust the last event.
        if let Some(size) = self.window.as_ref().map(|w| w.inner_size()) {
            self.fit_surface(size);
        }
        let (Some(pixels), Some(renderer)) = (&self.pixels, &self.renderer) else {
            return;
        };
        let surface = (self.surface.width, self.surface.height);
        let fit = aspect::layout(self.buffer, self.par, surface);
        let drawn = pixels.render_with(|encoder, target, ctx| {
            renderer.render(encoder, target, ctx, fit, surface);
            Ok(())
        });
        if let Err(e) = drawn {
            tracing::warn!("render: {e}");
        }
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_none() {
            if let Err(e) = self.create(event_loop) {
                self.error = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, _: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => self.requests.quit = true,
            WindowEvent::Resized(size) => {
                self.fit_surface(size);
                self.redraw = true;
            }
            WindowEvent::RedrawRequested => self.redraw = true,
            WindowEvent::Focused(false) => self.keyboard.release_all(),
            WindowEvent::ModifiersChanged(m) => self.alt = m.state().alt_key(),
            WindowEvent::KeyboardInput {
                event,
                is_synthetic,
                ..
            } => {
                let typing = self.typing.is_some();
                let pressed = event.state == ElementState::Pressed;
                match event.physical_key {
                    // Keys down as the focus came, reported when winit handles the focus
                    // (after a press that came meanwhile, its text then typed into the line
                    // it opened): they hold the pad's buttons, but open no chat line and
                    // are no hotkey.
                    PhysicalKey::Code(code) if is_synthetic && !typing => {
                        if pressed {
                            self.keyboard.key_down(code);
                        } else {
                            self.keyboard.key_up(code);
                        }
                    }
                    PhysicalKey::Code(code) if !is_synthetic => {
                        self.key(code, pressed, event.repeat)
                    }
                    _ => {}
                }
                if let (Some(secret), false, Some(text)) =
                    (&mut self.secret, is_synthetic, &event.text)
                {
                    if pressed && secret.chars().count() < MAX_TYPED {
                        secret.extend(text.chars().filter(|c| !c.is_control()));
                    }
                }
                // Only a line open before this key takes its text (not the key opening it).
                if let (true, false, Some(text)) = (typing, is_synthetic, &event.text) {
                    if event.state == ElementState::Pressed {
                        self.chat_text(text);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The windowed frontend for a [`Core`]: the run loop drives it through `app::windowed`.
pub struct WindowFrontend {
    event_loop: EventLoop<()>,
    app: App,
    gamepads: Gamepads,
    audio: AudioOut,
    audio_rate: f64,
    audio_buf: Vec<i16>,
    shot_at: Option<ShotAt>,
}

impl WindowFrontend {
    /// What the sound output did (`--stats-json`'s `audio`).
    pub fn audio_stats(&self) -> super::audio::AudioStats {
        self.audio.stats()
    }

    /// Opens the window (sized from the core's geometry), audio and gamepads.
    pub fn open(
        settings: WindowSettings,
        core: &Core,
        keymaps: &[KeyMap],
        audio: &AudioSettings,
        shot_at: Option<ShotAt>,
    ) -> Result<WindowFrontend, WindowError> {
        let av = core.av_info();
        let (bw, bh) = rotated_size(av.base_width.max(1), av.base_height.max(1), core.rotation());
        let bar_rows = bar_rows_for(settings.status.as_deref(), bw);
        let par = pixel_aspect_of(core, (bw, bh));
        let mut window = Self::open_sized(settings, keymaps, (bw, bh), par, bar_rows)?;
        window.audio = AudioOut::open(audio, av.sample_rate);
        window.audio_rate = av.sample_rate;
        window.shot_at = shot_at;
        Ok(window)
    }

    /// Opens the window on a text screen (`show_text`) before any core runs, sized as a
    /// `TEXT_SIZE` game would be; `start_game` turns it into the game's window.
    pub fn open_for_text(
        settings: WindowSettings,
        keymaps: &[KeyMap],
    ) -> Result<WindowFrontend, WindowError> {
        Self::open_sized(settings, keymaps, TEXT_SIZE, 1.0, 0)
    }

    /// The game starts in a window opened by `open_for_text`: sound starts, and the first
    /// frame resizes the buffer (and the window, unless the player resized it) to the game.
    pub fn start_game(
        &mut self,
        core: &Core,
        audio: &AudioSettings,
        shot_at: Option<ShotAt>,
        status: Option<String>,
        chat: Option<(ChatBoard, KeyCode)>,
    ) {
        let av = core.av_info();
        let (bw, _) = rotated_size(av.base_width.max(1), av.base_height.max(1), core.rotation());
        self.app.bar_rows = bar_rows_for(status.as_deref(), bw);
        self.app.settings.status = status;
        self.app.settings.chat = chat;
        self.audio = AudioOut::open(audio, av.sample_rate);
        self.audio_rate = av.sample_rate;
        self.shot_at = shot_at;
    }

    /// Shows `rows` of text on a black screen (each wrapped at spaces to the screen's
    /// width), handling the window's events for at most `timeout`. Returns true when the
    /// player asked to leave: Esc, or closing the window.
    pub fn show_text(&mut self, rows: &[String], timeout: Duration) -> Result<bool, WindowError> {
        let requests = self.pump(timeout)?;
        // Screenshots save the core's frame; there is none yet.
        self.app.screenshot = false;
        let redraw = std::mem::take(&mut self.app.redraw);
        if redraw || rows != self.app.text.as_slice() || self.app.stale() {
            self.app.text = rows.to_vec();
            self.app.draw_text();
            self.app.render();
        }
        Ok(requests.quit)
    }

    /// Asks for a secret (a password) on the text screen: `rows`, then `prompt` and a star
    /// for each character typed. Enter gives it; Esc or closing the window gives `None`.
    pub fn ask_secret(
        &mut self,
        rows: &[String],
        prompt: &str,
    ) -> Result<Option<String>, WindowError> {
        self.app.keyboard.release_all();
        self.app.secret = Some(String::new());
        self.app.secret_done = None;
        loop {
            let typed = self.app.secret.as_ref().map_or(0, |s| s.chars().count());
            let mut shown = rows.to_vec();
            shown.push(String::new());
            shown.push(format!("{prompt} {}_", "*".repeat(typed)));
            shown.push(String::new());
            shown.push("Enter goes on, Esc leaves".into());
            let quit = self.show_text(&shown, Duration::from_millis(30))?;
            match self.app.secret_done {
                _ if quit => break,
                Some(false) => break,
                Some(true) => return Ok(self.app.secret.take().filter(|s| !s.is_empty())),
                None => {}
            }
        }
        self.app.secret = None;
        Ok(None)
    }

    /// The window, its event loop and gamepads, on a `buffer`-sized image of pixels `par`
    /// as wide as tall with a status bar of `bar_rows` below; silent until given audio.
    fn open_sized(
        settings: WindowSettings,
        keymaps: &[KeyMap],
        (bw, bh): (u32, u32),
        par: f32,
        bar_rows: u32,
    ) -> Result<WindowFrontend, WindowError> {
        let event_loop = EventLoop::new().map_err(|e| WindowError::EventLoop(e.to_string()))?;
        let bh = bh + status_bar::height(bar_rows);
        let scale = settings.scale.clamp(1, 16);
        let (iw, ih) = aspect::window_size((bw, bh), par, scale);
        let mut app = App {
            initial: PhysicalSize::new(iw, ih),
            fullscreen: settings.fullscreen,
            settings,
            window: None,
            pixels: None,
            renderer: None,
            buffer: (bw, bh),
            par,
            bar_rows,
            surface: PhysicalSize::new(0, 0),
            keyboard: Keyboard::new(keymaps),
            alt: false,
            requests: Requests::default(),
            screenshot: false,
            redraw: false,
            error: None,
            status: Vec::new(),
            text: Vec::new(),
            typing: None,
            secret: None,
            secret_done: None,
            chat_drawn: (Vec::new(), None),
            status_changed: false,
        };
        let mut event_loop = event_loop;
        // The first pump delivers `resumed`, where the window is created.
        let _ = event_loop.pump_app_events(Some(Duration::ZERO), &mut app);
        if let Some(e) = app.error.take() {
            return Err(e);
        }
        if app.window.is_none() {
            return Err(WindowError::Window("the event loop did not resume".into()));
        }
        // Draw once now: the first frame drawn is the slowest (13-31 ms under lavapipe, 5-10
        // after), and in netplay it fell on the session's first frames, where it put this
        // peer that far behind the others.
        let t = Instant::now();
        app.render();
        tracing::debug!("first draw took {} ms", t.elapsed().as_millis());
        Ok(WindowFrontend {
            event_loop,
            gamepads: Gamepads::new(keymaps.len()),
            audio: AudioOut::silent(),
            audio_rate: 0.0,
            audio_buf: Vec::new(),
            shot_at: None,
            app,
        })
    }

    fn take_screenshot(&self, core: &Core) {
        let dir = &self.app.settings.screenshots_dir;
        let path = screenshot_path(dir, &self.app.settings.shot_name);
        match save_png(&path, &core_image(core), core.rotation()) {
            Ok(()) => tracing::info!("screenshot saved: {}", path.display()),
            Err(e) => tracing::warn!("screenshot failed: {e}"),
        }
    }

    /// Handles the window's events for at most `timeout`; returns what the player asked for.
    pub fn pump(&mut self, timeout: Duration) -> Result<Requests, WindowError> {
        let status = self
            .event_loop
            .pump_app_events(Some(timeout), &mut self.app);
        if let Some(e) = self.app.error.take() {
            return Err(e);
        }
        self.gamepads.poll();
        let mut requests = std::mem::take(&mut self.app.requests);
        if let PumpStatus::Exit(_) = status {
            requests.quit = true;
        }
        Ok(requests)
    }

    /// The local players' pads now: keyboard, then gamepads.
    pub fn pads(&mut self) -> Inputs {
        let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
        for (port, pad) in inputs
            .iter_mut()
            .enumerate()
            .take(self.app.keyboard.players())
        {
            *pad = self.app.keyboard.pad(port);
        }
        self.gamepads.read(&mut inputs);
        inputs
    }

    /// Queues the core's audio and draws its frame when `new_frame` (else redraws only
    /// what went stale); `frame` is the number of frames emulated so far.
    pub fn show(
        &mut self,
        core: &mut Core,
        new_frame: bool,
        frame: u64,
    ) -> Result<(), ScreenshotError> {
        let rate = core.av_info().sample_rate;
        if rate != self.audio_rate {
            self.audio.set_input_rate(rate);
            self.audio_rate = rate;
        }
        self.audio_buf.clear();
        core.drain_audio(&mut self.audio_buf);
        self.audio.push(&self.audio_buf);
        if new_frame {
            self.app.upload(core);
            self.app.redraw = true;
        } else if self.app.stale() {
            // No frame runs (a pause, the wait for the first frame): nothing else would show
            // the new status (`PAUSED`) or chat.
            self.app.repaint(core);
            self.app.redraw = true;
        }
        if std::mem::take(&mut self.app.redraw) {
            self.app.render();
        }
        if std::mem::take(&mut self.app.screenshot) {
            self.take_screenshot(core);
        }
        if let Some(shot) = &mut self.shot_at {
            shot.check(frame, core)?;
        }
        Ok(())
    }

    /// The status line to show in the bar below the game.
    pub fn set_status(&mut self, line: &str) {
        // Wrapped to the game's width (the buffer's); a bar too short for the rows grows at
        // the next frame, and the window with it unless the player resized it.
        let rows = status_bar::layout(line, self.app.buffer.0);
        self.app.status_changed |= rows != self.app.status;
        self.app.status = rows;
        self.app.bar_rows = self.app.bar_rows.max(self.app.status.len() as u32);
    }

    /// The game was paused or resumed: sound stops or starts, and the title says so.
    pub fn set_paused(&mut self, paused: bool) {
        self.audio.set_paused(paused);
        if let Some(w) = &self.app.window {
            let title = &self.app.settings.title;
            if paused {
                w.set_title(&format!("{title} (paused)"));
            } else {
                w.set_title(title);
            }
        }
    }
}

/// Rows of the status bar for a game `width` pixels wide: none without a status line,
/// else as many as the line needs and at least `status_bar::DEFAULT_ROWS`.
fn bar_rows_for(status: Option<&str>, width: u32) -> u32 {
    status.map_or(0, |line| {
        let rows = status_bar::layout(line, width).len() as u32;
        rows.max(status_bar::DEFAULT_ROWS)
    })
}

/// The core's display aspect ratio as a pixel shape for an image of `size` (after the
/// core's rotation, which turns the ratio over).
fn pixel_aspect_of(core: &Core, size: (u32, u32)) -> f32 {
    let a = aspect::rotated_aspect(core.av_info().aspect_ratio, core.rotation());
    aspect::pixel_aspect(size, a)
}
